/* Thin wrappers over HDF5 for the log: attributes, fixed and extendible datasets. */
#include "log_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
hid_t csm_h5_type(int t)
{
    return t == T_F64 ? H5T_NATIVE_DOUBLE : t == T_I32 ? H5T_NATIVE_INT32 : t == T_F32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64;
}

int csm_h5_attr_string(hid_t obj, const char *name, const char *value)
{
    /* variable-length UTF-8: h5py returns str, not bytes */
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
    hid_t space = H5Screate(H5S_SCALAR);
    if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
    hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, type, &value);
    if (a >= 0) H5Aclose(a);
    H5Sclose(space);
    H5Tclose(type);
    return rc < 0 ? -1 : 0;
}

int csm_h5_attr_double(hid_t obj, const char *name, const double *v, int count)
{
    hsize_t dims[1] = {(hsize_t)count};
    hid_t space = count == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, NULL);
    if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
    hid_t a = H5Acreate2(obj, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_DOUBLE, v);
    if (a >= 0) H5Aclose(a);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

int csm_h5_attr_int64(hid_t obj, const char *name, int64_t v)
{
    hid_t space = H5Screate(H5S_SCALAR);
    if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
    hid_t a = H5Acreate2(obj, name, H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_INT64, &v);
    if (a >= 0) H5Aclose(a);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

/* The chunk cache of a dataset frames are appended to: room for two of its chunks. HDF5's own
   (1 MiB and 521 chunks a dataset) keeps every chunk written until it fills, and a log's
   per-frame series start a new 8 KB chunk every 1,024 frames: a run's memory grew by about
   0.3 KB a frame for its first hundred thousand frames, 40 MB in all for a log of 40 series. Only
   the chunk the frames are filling is written again; w0 = 1 evicts a whole chunk first. */
hid_t csm_h5_append_access(hid_t dcpl, hid_t type)
{
    hsize_t chunk[4];
    int rank = H5Pget_chunk(dcpl, 4, chunk);
    size_t bytes = H5Tget_size(type);
    for (int r = 0; r < rank; r++) bytes *= (size_t)chunk[r];
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_chunk_cache(dapl, 7, 2 * bytes, 1.0);
    return dapl;
}

/* An extendible dataset opened to append to, with the chunk cache above. */
hid_t csm_h5_open_append(hid_t file, const char *path)
{
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    if (ds < 0) return ds;
    hid_t dcpl = H5Dget_create_plist(ds), type = H5Dget_type(ds);
    hid_t dapl = csm_h5_append_access(dcpl, type);
    H5Dclose(ds);
    ds = H5Dopen2(file, path, dapl);
    H5Pclose(dapl);
    H5Tclose(type);
    H5Pclose(dcpl);
    return ds;
}

hid_t csm_h5_chunked(int rank, const hsize_t *chunk, int compression)
{
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, rank, chunk);
    if (compression > 0 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
        H5Pset_shuffle(dcpl); /* the bytes of each significance together: deflate finds the runs */
        H5Pset_deflate(dcpl, (unsigned)compression);
    }
    return dcpl;
}

hid_t csm_h5_link_props(void)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    return lcpl;
}

/* A fixed-size dataset written at once (the /rest group). */
int csm_h5_write_fixed(hid_t file, const char *path, hid_t type, int rank, const hsize_t *dims,
                       const void *data, const char *units, const char *description)
{
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t lcpl = csm_h5_link_props();
    hid_t ds = H5Dcreate2(file, path, type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = ds < 0 ? -1 : H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (ds >= 0) {
        csm_h5_attr_string(ds, "units", units);
        csm_h5_attr_string(ds, "description", description);
        H5Dclose(ds);
    }
    H5Pclose(lcpl);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

/* Append `rows` rows to an extendible dataset. */
int64_t csm_h5_read_all(hid_t file, const char *path, hid_t memtype, void **out)
{
    *out = NULL;
    if (H5Lexists(file, path, H5P_DEFAULT) <= 0) return -1;
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    if (ds < 0) return -1;
    hid_t sp = H5Dget_space(ds);
    hsize_t dims[4] = {0};
    int rank = H5Sget_simple_extent_ndims(sp);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    hsize_t total = 1;
    for (int k = 0; k < rank; k++) total *= dims[k];
    *out = malloc(H5Tget_size(memtype) * (total ? total : 1));
    if (*out && total && H5Dread(ds, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
        free(*out);
        *out = NULL;
    }
    H5Sclose(sp);
    H5Dclose(ds);
    return *out ? (int64_t)total : -1;
}

int csm_h5_append(hid_t ds, int type, hsize_t rows, const void *data)
{
    if (rows == 0) return 0;
    hid_t space = H5Dget_space(ds);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[4];
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    hsize_t start[4] = {dims[0], 0, 0, 0}, count[4];
    memcpy(count, dims, sizeof count);
    count[0] = rows;
    dims[0] += rows;
    if (H5Dset_extent(ds, dims) < 0) return -1;
    space = H5Dget_space(ds);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t mem = H5Screate_simple(rank, count, NULL);
    herr_t rc = H5Dwrite(ds, csm_h5_type(type), mem, space, H5P_DEFAULT, data);
    H5Sclose(mem);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

/* Bytes that do not form UTF-8 (a corrupted string attribute) become '?', so that whatever prints
   the string prints text. */
static void utf8_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        int len = *p < 0x80 ? 1 : (*p >> 5) == 0x6 ? 2 : (*p >> 4) == 0xE ? 3 : (*p >> 3) == 0x1E ? 4 : 0;
        int ok = len > 0 && !(len == 2 && *p < 0xC2) && !(len == 4 && *p > 0xF4);
        for (int k = 1; ok && k < len; k++) ok = (p[k] & 0xC0) == 0x80;
        if (!ok) {
            *p++ = '?';
            continue;
        }
        p += len;
    }
}

char *csm_log_string_attr_dup(hid_t obj, const char *name)
{
    if (H5Aexists(obj, name) <= 0) return NULL;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    char *out = NULL;
    if (H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t)) {
        char *value = NULL;
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5T_CSET_UTF8);
        if (H5Aread(a, mt, &value) >= 0 && value) {
            out = strdup(value);
            H5free_memory(value);
        }
        H5Tclose(mt);
    } else if (H5Tget_class(t) == H5T_STRING) {
        size_t len = H5Tget_size(t);
        out = malloc(len + 1);
        if (out && H5Aread(a, t, out) >= 0) {
            out[len] = '\0';
        } else {
            free(out);
            out = NULL;
        }
    }
    H5Tclose(t);
    H5Aclose(a);
    if (out) utf8_clean(out);
    return out;
}

int csm_log_string_attr(hid_t obj, const char *name, char *buf, size_t size)
{
    buf[0] = '\0';
    char *value = csm_log_string_attr_dup(obj, name);
    if (!value) return -1;
    snprintf(buf, size, "%s", value);
    free(value);
    return 0;
}

hsize_t csm_h5_rows(hid_t ds)
{
    hid_t space = H5Dget_space(ds);
    hsize_t dims[4] = {0, 0, 0, 0};
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    return dims[0];
}

/* A 1-D dataset read a block of rows at a time (csm_rows_open, csm_rows_at): what is written at a
   log's end walks its frames' indexes this way, so that its memory does not grow with the frames. */
int csm_rows_open(csm_rows *r, hid_t file, const char *path, hid_t type)
{
    memset(r, 0, sizeof *r);
    r->ds = H5Lexists(file, path, H5P_DEFAULT) > 0 ? H5Dopen2(file, path, H5P_DEFAULT) : -1;
    r->type = type;
    r->size = H5Tget_size(type);
    r->total = r->ds >= 0 ? csm_h5_rows(r->ds) : 0;
    r->buf = r->ds >= 0 ? malloc(r->size * CSM_ROWS_BLOCK) : NULL;
    if (r->ds >= 0 && !r->buf) CSM_OUT_OF_MEMORY();
    return r->ds >= 0 ? 0 : -1;
}

int csm_rows_at(csm_rows *r, hsize_t t, void *out)
{
    if (r->ds < 0 || t >= r->total) return -1;
    if (t < r->first || t >= r->first + r->count) {
        hsize_t first = t - t % CSM_ROWS_BLOCK, count = r->total - first < CSM_ROWS_BLOCK ? r->total - first : CSM_ROWS_BLOCK;
        if (csm_h5_read(r->ds, r->type, first, count, r->buf)) {
            r->count = 0;
            return -1;
        }
        r->first = first;
        r->count = count;
    }
    memcpy(out, (const char *)r->buf + (t - r->first) * r->size, r->size);
    return 0;
}

void csm_rows_close(csm_rows *r)
{
    if (r->ds >= 0) H5Dclose(r->ds);
    free(r->buf);
    r->ds = -1;
    r->buf = NULL;
}

/* Rows [start, start + count) of an extendible dataset. */
int csm_h5_read(hid_t ds, hid_t type, hsize_t start, hsize_t count, void *buf)
{
    if (count == 0) return 0;
    hid_t space = H5Dget_space(ds);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[4], offset[4] = {start, 0, 0, 0};
    H5Sget_simple_extent_dims(space, dims, NULL);
    herr_t rc = -1;
    if (start + count <= dims[0]) {
        dims[0] = count;
        H5Sselect_hyperslab(space, H5S_SELECT_SET, offset, NULL, dims, NULL);
        hid_t mem = H5Screate_simple(rank, dims, NULL);
        rc = H5Dread(ds, type, mem, space, H5P_DEFAULT, buf);
        H5Sclose(mem);
    }
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

/* The selection of rows first, first + 2, ... in a dataset's space and its memory space. */
static hid_t slot_select(hid_t space, hsize_t first, hsize_t count, int rank, hsize_t *dims)
{
    hsize_t start[4] = {first, 0, 0, 0}, stride[4] = {2, 1, 1, 1}, block[4] = {1, 1, 1, 1};
    dims[0] = count;
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, dims, block);
    return H5Screate_simple(rank, dims, NULL);
}

int csm_h5_read_slot(hid_t ds, hid_t type, hsize_t first, hsize_t count, void *buf)
{
    if (count == 0) return 0;
    hid_t space = H5Dget_space(ds);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[4];
    H5Sget_simple_extent_dims(space, dims, NULL);
    herr_t rc = -1;
    if (first + 2 * (count - 1) < dims[0]) {
        hid_t mem = slot_select(space, first, count, rank, dims);
        rc = H5Dread(ds, type, mem, space, H5P_DEFAULT, buf);
        H5Sclose(mem);
    }
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

int csm_h5_write_slot(hid_t ds, int type, hsize_t first, hsize_t count, const void *data)
{
    if (count == 0) return 0;
    hid_t space = H5Dget_space(ds);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[4];
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    if (dims[0] < first + 2 * (count - 1) + 1) { /* grown to both slots of every cluster */
        dims[0] = 2 * (first / 2 + count);
        if (H5Dset_extent(ds, dims) < 0) return -1;
    }
    space = H5Dget_space(ds);
    hid_t mem = slot_select(space, first, count, rank, dims);
    herr_t rc = H5Dwrite(ds, csm_h5_type(type), mem, space, H5P_DEFAULT, data);
    H5Sclose(mem);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

int csm_h5_read_last(hid_t ds)
{
    hsize_t rows = csm_h5_rows(ds);
    if (rows == 0) return 0;
    hid_t space = H5Dget_space(ds), type = H5Dget_type(ds);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[4] = {0, 1, 1, 1}, start[4] = {rows - 1, 0, 0, 0};
    H5Sget_simple_extent_dims(space, dims, NULL);
    size_t bytes = H5Tget_size(type);
    for (int a = 1; a < rank; a++) bytes *= (size_t)dims[a];
    dims[0] = 1;
    void *buf = malloc(bytes + 1);
    herr_t rc = -1;
    if (buf && H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, dims, NULL) >= 0) {
        hid_t mem = H5Screate_simple(rank, dims, NULL);
        rc = H5Dread(ds, type, mem, space, H5P_DEFAULT, buf);
        H5Sclose(mem);
    }
    free(buf);
    H5Tclose(type);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

int csm_h5_set_rows(hid_t ds, hsize_t rows)
{
    hid_t space = H5Dget_space(ds);
    hsize_t dims[4];
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    dims[0] = rows;
    return H5Dset_extent(ds, dims) < 0 ? -1 : 0;
}

/* A whole fixed dataset equals `data` byte for byte. */
int csm_h5_same(hid_t file, const char *path, hid_t type, const void *data, size_t bytes)
{
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    if (ds < 0) return 0;
    hid_t space = H5Dget_space(ds);
    hssize_t count = H5Sget_simple_extent_npoints(space);
    H5Sclose(space);
    void *buf = malloc(bytes ? bytes : 1);
    int same = buf && (size_t)count * H5Tget_size(type) == bytes &&
               H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0 && !memcmp(buf, data, bytes);
    free(buf);
    H5Dclose(ds);
    return same;
}

/* Open for writing, clearing the open-for-writing mark a killed writer left. */
hid_t csm_log_open_clearing(const char *path)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    hbool_t clear = 1;
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    hid_t f = H5Pset(fapl, "clear_status_flags", &clear) < 0 ? -1 : H5Fopen(path, H5F_ACC_RDWR, fapl);
    H5Pclose(fapl);
    return f;
}

int csm_log_is_hdf5(const char *path) { return H5Fis_hdf5(path) > 0; }

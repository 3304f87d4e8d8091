/* The XDMF sidecar ParaView opens a log through. */
#include "log_internal.h"
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* The log's path with its extension replaced by `ext`. */
static void beside(const char *h5path, const char *ext, char *buf, int size)
{
    const char *dot = strrchr(h5path, '.'), *slash = strrchr(h5path, '/');
    if (dot && (!slash || dot > slash))
        snprintf(buf, (size_t)size, "%.*s%s", (int)(dot - h5path), h5path, ext);
    else
        snprintf(buf, (size_t)size, "%s%s", h5path, ext);
}

void csm_log_xdmf_path(const char *h5path, char *buf, int size) { beside(h5path, ".xmf", buf, size); }

/* (.hdf5, so that a glob of a folder's *.h5 finds the logs alone) */
void csm_log_view_path(const char *h5path, char *buf, int size) { beside(h5path, ".view.hdf5", buf, size); }

/* A file name as XML text: &, < and > escaped (quotes too, for good measure). */
static void xml_escape(const char *in, char *out, size_t size)
{
    size_t nb = 0;
    for (const char *ch = in; *ch && nb + 7 < size; ch++) {
        const char *esc = *ch == '&' ? "&amp;" : *ch == '<' ? "&lt;" : *ch == '>' ? "&gt;" : *ch == '"' ? "&quot;"
                        : *ch == '\'' ? "&apos;" : NULL;
        if (esc) {
            memcpy(out + nb, esc, strlen(esc));
            nb += strlen(esc);
        } else {
            out[nb++] = *ch;
        }
    }
    out[nb] = '\0';
}

static const char *file_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* ParaView 5.11's Xdmf3 reader (the one picked for .xmf) reads slices of the (T, n, 3)
   datasets through HDF5 hyperslab paths "file.h5:/path|start:stride:count:dims"; each time
   step is one Polyvertex grid with an explicit connectivity item. */
int csm_log_write_xdmf(const char *h5path, char *buf, int size, csm_error *err)
{
    csm_log_xdmf_path(h5path, buf, size);
    char note[512];
    hid_t file = csm_log_open_read(h5path, 0, NULL, note, sizeof note);
    if (file < 0) return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot open the log", h5path);
    char why[512];
    if (csm_log_check_shapes(file, why, sizeof why)) {
        H5Fclose(file);
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: corrupt log: %s", h5path, why);
    }
    hid_t pos = H5Dopen2(file, "/frames/positions", H5P_DEFAULT);
    csm_rows times; /* a block at a time: a long run's sidecar takes no memory that grows with it */
    if (pos < 0 || csm_rows_open(&times, file, "/frames/time", H5T_NATIVE_DOUBLE)) {
        if (pos >= 0) H5Dclose(pos);
        csm_rows_close(&times);
        H5Fclose(file);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: not a csm log (no /frames/positions)", h5path);
    }
    hsize_t dims[3];
    hid_t space = H5Dget_space(pos);
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    /* the complete frames are /frames/time's rows: a live writer may have begun the next one */
    hsize_t T = dims[0] < times.total ? dims[0] : times.total, n = dims[1];
    int has_goals = H5Lexists(file, "/frames/goals", H5P_DEFAULT) > 0;
    H5Dclose(pos);
    /* speed, displacement and the nearest cluster, in the view file beside the log (view.c) */
    char viewpath[4200];
    csm_log_view_path(h5path, viewpath, sizeof viewpath);
    errno = 0;
    int has_cluster = 0, view = csm_log_write_view(file, viewpath, T, n, &has_cluster), has_view = view == 0;
    int view_errno = errno;

    /* The sidecar refers to the log and the view file by their names: all sit in one folder. */
    char base[6 * 1024], viewname[6 * 1024];
    xml_escape(file_name(h5path), base, sizeof base);
    xml_escape(file_name(viewpath), viewname, sizeof viewname);
    char tmp[4200];
    /* a name of this process's own: a run and a csm info that write the same files at once each
       rename a whole file into place, and neither fails for the other's */
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", buf, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        csm_rows_close(&times);
        H5Fclose(file);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the sidecar: %s", tmp, strerror(errno));
    }
    int bad = 0;
    fprintf(f, "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n <Domain>\n");
    fprintf(f, "  <Grid Name=\"particles\" GridType=\"Collection\" CollectionType=\"Temporal\">\n");
    for (hsize_t t = 0; t < T; t++) {
        fprintf(f, "   <Grid Name=\"frame%llu\" GridType=\"Uniform\">\n", (unsigned long long)t);
        double time = 0;
        if (csm_rows_at(&times, t, &time)) bad = 1;
        fprintf(f, "    <Time Value=\"%.17g\"/>\n", time);
        fprintf(f, "    <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%llu\" NodesPerElement=\"1\">\n",
                (unsigned long long)n);
        fprintf(f, "     <DataItem Dimensions=\"%llu\" NumberType=\"Int\" Format=\"HDF\">%s:/rest/id|0:1:%llu:%llu</DataItem>\n",
                (unsigned long long)n, base, (unsigned long long)n, (unsigned long long)n);
        fprintf(f, "    </Topology>\n");
        fprintf(f, "    <Geometry GeometryType=\"XYZ\">\n");
        fprintf(f, "     <DataItem Dimensions=\"%llu 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">"
                   "%s:/frames/positions|%llu 0 0:1 1 1:1 %llu 3:%llu %llu 3</DataItem>\n",
                (unsigned long long)n, base, (unsigned long long)t, (unsigned long long)n,
                (unsigned long long)T, (unsigned long long)n);
        fprintf(f, "    </Geometry>\n");
        /* what each particle is, the same in every frame: its body and its mass (/rest) */
        static const struct {
            const char *name, *type;
            int precision;
        } rest[] = {{"object", "Int", 4}, {"mass", "Float", 8}};
        for (int a = 0; a < 2; a++)
            fprintf(f,
                    "    <Attribute Name=\"%s\" AttributeType=\"Scalar\" Center=\"Node\">\n"
                    "     <DataItem Dimensions=\"%llu\" NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">"
                    "%s:/rest/%s|0:1:%llu:%llu</DataItem>\n"
                    "    </Attribute>\n",
                    rest[a].name, (unsigned long long)n, rest[a].type, rest[a].precision, base, rest[a].name,
                    (unsigned long long)n, (unsigned long long)n);
        const char *attrs[2] = {"velocities", "goals"};
        for (int a = 0; a < 1 + has_goals; a++) {
            fprintf(f, "    <Attribute Name=\"%s\" AttributeType=\"Vector\" Center=\"Node\">\n", attrs[a]);
            fprintf(f, "     <DataItem Dimensions=\"%llu 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">"
                       "%s:/frames/%s|%llu 0 0:1 1 1:1 %llu 3:%llu %llu 3</DataItem>\n",
                    (unsigned long long)n, base, attrs[a], (unsigned long long)t, (unsigned long long)n,
                    (unsigned long long)T, (unsigned long long)n);
            fprintf(f, "    </Attribute>\n");
        }
        static const struct {
            const char *name, *type, *number;
            int cols, precision;
        } derived[] = {{"speed", "Scalar", "Float", 1, 4}, {"displacement", "Vector", "Float", 3, 4}, {"cluster", "Scalar", "Int", 1, 4}};
        for (int a = 0; a < 3 && has_view; a++) {
            if (a == 2 && !has_cluster) continue;
            unsigned long long c = (unsigned long long)derived[a].cols, tt = (unsigned long long)t, nn = (unsigned long long)n;
            fprintf(f, "    <Attribute Name=\"%s\" AttributeType=\"%s\" Center=\"Node\">\n", derived[a].name, derived[a].type);
            if (c > 1)
                fprintf(f, "     <DataItem Dimensions=\"%llu %llu\" NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">"
                           "%s:/%s|%llu 0 0:1 1 1:1 %llu %llu:%llu %llu %llu</DataItem>\n",
                        nn, c, derived[a].number, derived[a].precision, viewname, derived[a].name, tt, nn, c,
                        (unsigned long long)T, nn, c);
            else
                fprintf(f, "     <DataItem Dimensions=\"%llu\" NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">"
                           "%s:/%s|%llu 0:1 1:1 %llu:%llu %llu</DataItem>\n",
                        nn, derived[a].number, derived[a].precision, viewname, derived[a].name, tt, nn, (unsigned long long)T, nn);
            fprintf(f, "    </Attribute>\n");
        }
        fprintf(f, "   </Grid>\n");
    }
    fprintf(f, "  </Grid>\n </Domain>\n</Xdmf>\n");
    csm_rows_close(&times);
    H5Fclose(file);
    bad |= ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, buf) != 0) {
        remove(tmp);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the sidecar", buf);
    }
    if (view < 0) /* the log and its sidecar stand; the speed, displacement and cluster views do not */
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the view file (%s): the sidecar names the log's "
                        "datasets only (once there is room, csm info writes both again if the sidecar is removed)", viewpath,
                        view_errno ? strerror(view_errno) : "HDF5 error");
    return 0;
}

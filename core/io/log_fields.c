/* The datasets of the log: a table of path, type, shape, rows per frame, units and description. */
#include "log_internal.h"

#include <string.h>
const field_spec csm_log_fields[F_NFIELDS] = {
    [F_TIME] = {"/frames/time", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "simulated time of each logged frame", 0, OPT_NONE},
    [F_POSITIONS] = {"/frames/positions", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m", "particle positions x_i", 0, OPT_NONE},
    [F_VELOCITIES] = {"/frames/velocities", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m/s", "particle velocities v_i", 0, OPT_NONE},
    [F_GOALS] = {"/frames/goals", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m", "goal positions g_i = sum_c w_ic g_ic", 0, OPT_GOALS},
    [F_COUNT] = {"/clusters/count", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                "clusters per frame, those fading in or out included (/clusters/state)", 0, OPT_NONE},
    [F_FRAME_OFFSET] = {"/clusters/frame_offset", T_I64, SHAPE_SCALAR, ROWS_ONE, "1",
                        "(T+1,): frame t's memberships are members/weights[frame_offset[t]:frame_offset[t+1]]", 0, OPT_NONE},
    [F_FRAME_CLUSTER] = {"/clusters/frame_cluster", T_I64, SHAPE_SCALAR, ROWS_ONE, "1",
                         "(T+1,): frame t's clusters are com/R/Fp rows [frame_cluster[t]:frame_cluster[t+1]]; "
                         "its offsets are offsets[frame_cluster[t] + t : frame_cluster[t+1] + t + 1]", 0, OPT_NONE},
    [F_OFFSETS] = {"/clusters/offsets", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS_PLUS_ONE, "1",
                   "per frame, k+1 CSR offsets (from 0) of each cluster's members", 0, OPT_NONE},
    [F_MEMBERS] = {"/clusters/members", T_I32, SHAPE_SCALAR, ROWS_MEMBERSHIPS, "1", "per frame, member particle of each membership", 0, OPT_NONE},
    [F_WEIGHTS] = {"/clusters/weights", T_F64, SHAPE_SCALAR, ROWS_MEMBERSHIPS, "1", "per frame, w_ic of each membership", 0, OPT_NONE},
    [F_COM] = {"/clusters/com", T_F64, SHAPE_VEC3, ROWS_CLUSTERS, "m", "per frame, cluster centre of mass x-bar_c", 0, OPT_NONE},
    [F_R] = {"/clusters/R", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1", "per frame, cluster rotation R_c", 0, OPT_NONE},
    [F_FP] = {"/clusters/Fp", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1", "per frame, plastic deformation F^p_c", 0, OPT_NONE},
    [F_ALPHA] = {"/clusters/stress_alpha", T_F64, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
                 "per frame, cumulative plastic stress alpha_c (Falkenstein Eq 14)", 0, OPT_NONE},
    [F_WIDTH] = {"/clusters/width", T_F64, SHAPE_SCALAR, ROWS_CLUSTERS, "m",
                 "per frame, cluster width w_c = max_i |p_ic| (Bargteil-Jones Eq 5)", 0, OPT_NONE},
    [F_ID] = {"/clusters/id", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
              "per frame, stable cluster id (the initial clusters are 0..k-1; added clusters count on)", 0, OPT_NONE},
    [F_STATE] = {"/clusters/state", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
                 "per frame, 0 active, 1 fading out (marked for removal), 2 fading in (added)", 0, OPT_NONE},
    [F_KINETIC] = {"/diagnostics/kinetic_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "sum 1/2 m |v|^2", 0, OPT_NONE},
    [F_POTENTIAL] = {"/diagnostics/potential_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "gravitational potential energy -sum m g.x", 0, OPT_NONE},
    [F_ELASTIC] = {"/diagnostics/elastic_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "kg m^2",
                   "shape-matching energy sum_c sum_i w_ic m_i |x_i - g_ic|^2", 0, OPT_NONE},
    [F_MOMENTUM] = {"/diagnostics/linear_momentum", T_F64, SHAPE_VEC3, ROWS_ONE, "kg m/s", "sum m v", 0, OPT_NONE},
    [F_ANGULAR] = {"/diagnostics/angular_momentum", T_F64, SHAPE_VEC3, ROWS_ONE, "kg m^2/s", "sum m x cross v about the world origin", 0, OPT_NONE},
    [F_COM_ALL] = {"/diagnostics/center_of_mass", T_F64, SHAPE_VEC3, ROWS_ONE, "m", "centre of mass of all particles", 0, OPT_NONE},
    [F_MAX_STRAIN] = {"/diagnostics/max_strain", T_F64, SHAPE_SCALAR, ROWS_ONE, "1",
                      "max over memberships of beta = |x_i - g_ic| / width_c (Bargteil-Jones Eq 4)", 0, OPT_NONE},
    [F_VOLUME] = {"/diagnostics/volume_ratio", T_F64, SHAPE_SCALAR, ROWS_ONE, "1", "mean det F^p over clusters", 0, OPT_NONE},
    [F_MAX_COND_FP] = {"/diagnostics/max_cond_Fp", T_F64, SHAPE_SCALAR, ROWS_ONE, "1",
                       "largest condition number sigma_max / sigma_min of F^p over clusters", 0, OPT_NONE},
    [F_YIELDED] = {"/diagnostics/yielded", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                   "clusters whose F^p flowed since the previous logged frame (Falkenstein Eq 11-12)", 0, OPT_NONE},
    [F_PLASTIC_SKIPPED] = {"/diagnostics/plastic_skipped", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                           "plastic updates skipped since the previous logged frame on a collapsed or inverted F^e (cluster-steps)", 0, OPT_NONE},
    [F_GAIN] = {"/diagnostics/alpha_c", T_F64, SHAPE_COLS, ROWS_ONE, "1",
                "min, mean and max over clusters of the spring gain alpha_c = h^2 k_c of the frame's last step "
                "(solver.alpha, or from solver.modulus; 0 without springs)", 3, OPT_NONE},
    [F_GAIN_CLAMPED] = {"/diagnostics/alpha_clamped", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                        "clusters whose gain from solver.modulus exceeded 1 and was clamped to 1 in the frame's last "
                        "step (the step is too coarse for the modulus)", 0, OPT_NONE},
    [F_T_DYNAMICS] = {"/timings/dynamics", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "forces, integrator and colliders per frame", 0, OPT_NONE},
    [F_T_PLASTICITY] = {"/timings/plasticity", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "plasticity per frame", 0, OPT_NONE},
    [F_T_RECLUSTERING] = {"/timings/reclustering", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "reclustering per frame (embedding included)", 0, OPT_NONE},
    [F_T_EMBEDDING] = {"/timings/embedding", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "embedding optimisation per frame", 0, OPT_NONE},
    [F_T_TOTAL] = {"/timings/total", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "whole frame: every stage and the diagnostics", 0, OPT_NONE},
    [F_CK_FRAME] = {"/checkpoint/frame", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                    "frames computed when each logged frame was written (logged frames are every output.every-th)", 0,
                    OPT_NONE},
    [F_CK_STEP] = {"/checkpoint/step", T_I64, SHAPE_SCALAR, ROWS_ONE, "1", "steps taken", 0, OPT_NONE},
    [F_CK_NEXT_ID] = {"/checkpoint/next_id", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "id the next added cluster gets", 0,
                      OPT_NONE},
    [F_CK_VERSION] = {"/checkpoint/rest_version", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                      "version of /checkpoint/rest the frame's clusters use", 0, OPT_NONE},
    [F_CK_Q] = {"/checkpoint/q", T_F64, SHAPE_COLS, ROWS_CLUSTERS, "1",
                "per frame, R_c as a unit quaternion (w, x, y, z): the warm start of the next polar decomposition", 4,
                OPT_NONE},
    [F_CK_FADE] = {"/checkpoint/fade", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
                   "per frame, steps since a fading cluster was marked or added", 0, OPT_NONE},
    [F_CK_F] = {"/checkpoint/F", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1", "per frame, F_c = A_xr A_rr^-1 of the last fit", 0,
                OPT_NONE},
    [F_CK_T] = {"/checkpoint/T", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1",
                "per frame, goal transform of the last fit: g_ic = T_c p_ic + com_c", 0, OPT_NONE},
    [F_CK_QUAD] = {"/checkpoint/Q", T_F64, SHAPE_COLS, ROWS_CLUSTERS, "1",
                   "per frame, 3x6 quadratic part of the goal transform (Mueller 2005 Sec 4.3)", 18, OPT_QUADRATIC},
    [F_RV_CLUSTER_START] = {"/checkpoint/rest/cluster_start", T_I64, SHAPE_SCALAR, ROWS_VERSIONS_PLUS_ONE, "1",
                            "(V+1,): version v's per-cluster rows are [cluster_start[v], cluster_start[v+1])", 0, OPT_NONE},
    [F_RV_MEMBER_START] = {"/checkpoint/rest/member_start", T_I64, SHAPE_SCALAR, ROWS_VERSIONS_PLUS_ONE, "1",
                           "(V+1,): version v's per-membership rows are [member_start[v], member_start[v+1])", 0,
                           OPT_NONE},
    [F_RV_WBASE] = {"/checkpoint/rest/wbase", T_F64, SHAPE_SCALAR, ROWS_REST_MEMBERS, "1",
                    "per version, membership weight before fading (Falkenstein Sec 3.2.1)", 0, OPT_NONE},
    [F_RV_WMASS] = {"/checkpoint/rest/wmass", T_F64, SHAPE_SCALAR, ROWS_REST_MEMBERS, "kg",
                    "per version, w_ic m_i (Falkenstein Eq 7)", 0, OPT_NONE},
    [F_RV_P] = {"/checkpoint/rest/p", T_F64, SHAPE_VEC3, ROWS_REST_MEMBERS, "m",
                "per version, rest offset p_ic from the cluster's rest centre of mass", 0, OPT_NONE},
    [F_RV_MASS] = {"/checkpoint/rest/mass", T_F64, SHAPE_SCALAR, ROWS_REST_CLUSTERS, "kg", "per version, sum_i w_ic m_i",
                   0, OPT_NONE},
    [F_RV_ARR] = {"/checkpoint/rest/A_rr_inv", T_F64, SHAPE_MAT3, ROWS_REST_CLUSTERS, "1/(kg m^2)",
                  "per version, pseudo-inverse of A_rr = sum_i w_ic m_i p_ic p_ic^T", 0, OPT_NONE},
    [F_RV_RANK] = {"/checkpoint/rest/rank", T_I32, SHAPE_SCALAR, ROWS_REST_CLUSTERS, "1", "per version, rank of A_rr", 0,
                   OPT_NONE},
    [F_RV_QMEAN] = {"/checkpoint/rest/qmean", T_F64, SHAPE_COLS, ROWS_REST_CLUSTERS, "m^2",
                    "per version, weighted mean of the quadratic terms of p_ic", 6, OPT_QUADRATIC},
    [F_RV_AQQ] = {"/checkpoint/rest/Aqq_inv", T_F64, SHAPE_COLS, ROWS_REST_CLUSTERS, "1",
                  "per version, 9x9 pseudo-inverse of the quadratic moment matrix", 81, OPT_QUADRATIC},
};

int csm_log_field_used(const csm_log *log, int k)
{
    return csm_log_fields[k].opt == OPT_NONE || (csm_log_fields[k].opt == OPT_GOALS && log->goals) ||
           (csm_log_fields[k].opt == OPT_QUADRATIC && log->quadratic);
}

hsize_t csm_log_field_rows(int k, const log_extent *e)
{
    if (k == F_FRAME_OFFSET || k == F_FRAME_CLUSTER) return e->T + 1;
    switch (csm_log_fields[k].rows) {
    case ROWS_CLUSTERS: return e->clusters;
    case ROWS_CLUSTERS_PLUS_ONE: return e->clusters + e->T;
    case ROWS_MEMBERSHIPS: return e->memberships;
    case ROWS_VERSIONS_PLUS_ONE: return e->versions + 1;
    case ROWS_REST_CLUSTERS: return e->rest_clusters;
    case ROWS_REST_MEMBERS: return e->rest_members;
    default: return e->T;
    }
}

hid_t csm_log_field_create(hid_t file, const field_spec *f, int32_t n)
{
    hsize_t dims[4] = {0, 0, 0, 0}, maxdims[4] = {H5S_UNLIMITED, 0, 0, 0}, chunk[4] = {1, 0, 0, 0};
    int rank = 1;
    switch (f->shape) {
    case SHAPE_SCALAR: break;
    case SHAPE_VEC3: rank = 2; dims[1] = maxdims[1] = chunk[1] = 3; break;
    case SHAPE_MAT3: rank = 3; dims[1] = dims[2] = maxdims[1] = maxdims[2] = chunk[1] = chunk[2] = 3; break;
    case SHAPE_PARTICLES3:
        rank = 3;
        dims[1] = maxdims[1] = chunk[1] = (hsize_t)(n > 0 ? n : 1);
        dims[2] = maxdims[2] = chunk[2] = 3;
        break;
    case SHAPE_COLS: rank = 2; dims[1] = maxdims[1] = chunk[1] = (hsize_t)f->cols; break;
    }
    if (f->shape != SHAPE_PARTICLES3)
        chunk[0] = f->rows == ROWS_ONE || f->rows == ROWS_VERSIONS_PLUS_ONE ? 256 : f->cols > 8 ? 256 : 4096;
    hid_t space = H5Screate_simple(rank, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, rank, chunk);
    hid_t lcpl = csm_h5_link_props();
    hid_t ds = H5Dcreate2(file, f->path, csm_h5_type(f->type), space, lcpl, dcpl, H5P_DEFAULT);
    if (ds >= 0) {
        csm_h5_attr_string(ds, "units", f->units);
        csm_h5_attr_string(ds, "description", f->description);
    }
    H5Pclose(lcpl);
    H5Pclose(dcpl);
    H5Sclose(space);
    return ds;
}

/* The datasets of the log: a table of path, type, shape, rows per frame, units and description. */
#include "log_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* Accessors: where a frame's rows of each built-in dataset are. */
#define ACCESSOR(name, expr)                                                                      \
    static const void *name(const frame_ctx *c, const field_spec *f)                              \
    {                                                                                             \
        (void)f;                                                                                  \
        return (expr);                                                                            \
    }
ACCESSOR(d_positions, c->sim->w.P.x)
ACCESSOR(d_velocities, c->sim->w.P.v)
ACCESSOR(d_goals, c->log->goal)
ACCESSOR(d_count, &c->sim->w.C.k)
ACCESSOR(d_frame_membership, &c->log->memberships_out)
ACCESSOR(d_frame_cluster, &c->log->clusters_out)
ACCESSOR(d_mversion, &c->mversion)
ACCESSOR(d_cversion, &c->cversion)
ACCESSOR(d_com, c->sim->w.C.com)
ACCESSOR(d_r, c->sim->w.C.R)
ACCESSOR(d_kinetic, &c->d->kinetic)
ACCESSOR(d_potential, &c->d->potential)
ACCESSOR(d_elastic, &c->d->elastic)
ACCESSOR(d_goal_distance, &c->d->goal_distance)
ACCESSOR(d_work_external, &c->sim->work_external)
ACCESSOR(d_momentum, c->d->momentum)
ACCESSOR(d_angular, c->d->angular_momentum)
ACCESSOR(d_com_all, c->d->center_of_mass)
ACCESSOR(d_max_strain, &c->d->max_strain)
ACCESSOR(d_volume, &c->d->volume_ratio)
ACCESSOR(d_max_cond_fp, &c->d->max_cond_Fp)
ACCESSOR(d_inverted, &c->d->inverted)
ACCESSOR(d_yielded, &c->sim->report.yielded)
ACCESSOR(d_plastic_skipped, &c->sim->report.plastic_skipped)
ACCESSOR(d_gain, &c->sim->report.gains.min)
ACCESSOR(d_gain_clamped, &c->sim->report.gains.clamped)
ACCESSOR(d_iteration_residual, &c->sim->report.iteration_residual)
ACCESSOR(d_energy_error, &c->d->energy_error)
ACCESSOR(d_elastic_lag, &c->d->elastic_lag)
ACCESSOR(d_dissipated_damping, &c->sim->report.dissipated[CSM_DISSIPATED_DAMPING])
ACCESSOR(d_dissipated_viscosity, &c->sim->report.dissipated[CSM_DISSIPATED_VISCOSITY])
ACCESSOR(d_dissipated_numerical, &c->sim->report.dissipated[CSM_DISSIPATED_NUMERICAL])
ACCESSOR(d_dissipated_plastic, &c->sim->report.dissipated[CSM_DISSIPATED_PLASTIC])
ACCESSOR(d_dissipated_contact, &c->d->dissipated_contact)
ACCESSOR(d_recluster_energy, &c->sim->report.recluster_energy)
ACCESSOR(d_contact_pairs, &c->d->contact_pairs)
ACCESSOR(d_contact_depth, &c->d->contact_depth)
ACCESSOR(d_ck_frame, &c->sim->frame)
ACCESSOR(d_ck_step, &c->sim->w.step)
ACCESSOR(d_ck_next_id, &c->sim->w.C.next_id)
ACCESSOR(d_ck_version, &c->version)
ACCESSOR(d_ck_q, c->sim->w.C.q)
ACCESSOR(d_ck_fade, c->sim->w.C.fade)
ACCESSOR(d_ck_f, c->sim->w.C.F)
ACCESSOR(d_ck_t, c->sim->w.C.T)
ACCESSOR(d_ck_quad, c->sim->w.C.Q)
ACCESSOR(d_ck_f_lagged, c->sim->w.C.F_lagged)

/* a timing of the frame (csm_report's names index sim->last) */
static const void *d_timing(const frame_ctx *c, const field_spec *f) { return &c->sim->last.seconds[f->index]; }

/* A built-in row: everything but the fields a plugin's or a timing's row uses. */
#define FIELD(path, type, shape, rows, units, description, cols, opt, data)                     \
    {(path), (type), (shape), (rows), (units), (description), (cols), (opt), (data), 0, NULL, NULL, 0}

const field_spec csm_log_fields[F_NFIELDS] = {
    [F_TIME] = FIELD("/frames/time", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "simulated time of each logged frame", 0, OPT_NONE, NULL),
    [F_POSITIONS] = FIELD("/frames/positions", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m", "particle positions x_i", 0, OPT_NONE, d_positions),
    [F_VELOCITIES] = FIELD("/frames/velocities", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m/s", "particle velocities v_i", 0, OPT_NONE, d_velocities),
    [F_GOALS] = FIELD("/frames/goals", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m", "goal positions g_i = sum_c w_ic g_ic", 0, OPT_GOALS, d_goals),
    [F_COUNT] = FIELD("/clusters/count", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "clusters per frame, those fading in or out included (/clusters/state)", 0, OPT_NONE, d_count),
    [F_FRAME_MEMBERSHIP] = FIELD("/clusters/frame_membership", T_I64, SHAPE_SCALAR, ROWS_ONE, "1", "(T+1,): memberships of the frames before frame t; frame t's rows of a "
                              "per-membership dataset a plugin declares are [frame_membership[t], frame_membership[t+1])", 0, OPT_NONE, d_frame_membership),
    [F_FRAME_CLUSTER] = FIELD("/clusters/frame_cluster", T_I64, SHAPE_SCALAR, ROWS_ONE, "1", "(T+1,): frame t's clusters are com and R rows [frame_cluster[t], frame_cluster[t+1])", 0, OPT_NONE, d_frame_cluster),
    [F_MVERSION] = FIELD("/clusters/membership_version", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "membership version v of frame t: its offsets, members and weights "
                     "(written only when they change)", 0, OPT_NONE, d_mversion),
    [F_MV_OFFSETS_START] = FIELD("/clusters/version_offsets", T_I64, SHAPE_SCALAR, ROWS_MVERSIONS_PLUS_ONE, "1", "(V+1,): version v's k+1 CSR offsets are /clusters/offsets rows "
                              "[version_offsets[v], version_offsets[v+1])", 0, OPT_NONE, NULL),
    [F_MV_MEMBER_START] = FIELD("/clusters/version_members", T_I64, SHAPE_SCALAR, ROWS_MVERSIONS_PLUS_ONE, "1", "(V+1,): version v's memberships are /clusters/members and weights rows "
                             "[version_members[v], version_members[v+1])", 0, OPT_NONE, NULL),
    [F_OFFSETS] = FIELD("/clusters/offsets", T_I32, SHAPE_SCALAR, ROWS_MV_OFFSETS, "1", "per membership version, k+1 CSR offsets (from 0) of each cluster's members", 0, OPT_NONE, NULL),
    [F_MEMBERS] = FIELD("/clusters/members", T_I32, SHAPE_SCALAR, ROWS_MV_MEMBERS, "1", "per membership version, member particle of each membership", 0, OPT_NONE, NULL),
    [F_WEIGHTS] = FIELD("/clusters/weights", T_F64, SHAPE_SCALAR, ROWS_MV_MEMBERS, "1", "per membership version, w_ic of each membership", 0, OPT_NONE, NULL),
    [F_COM] = FIELD("/clusters/com", T_F64, SHAPE_VEC3, ROWS_CLUSTERS, "m", "per frame, cluster centre of mass x-bar_c", 0, OPT_NONE, d_com),
    [F_R] = FIELD("/clusters/R", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1", "per frame, cluster rotation R_c", 0, OPT_NONE, d_r),
    [F_CVERSION] = FIELD("/clusters/cluster_version", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "version v of the clusters' slow state frame t uses: its Fp, stress_alpha, width, "
                     "id and state (written only when they change)", 0, OPT_NONE, d_cversion),
    [F_CV_START] = FIELD("/clusters/version_clusters", T_I64, SHAPE_SCALAR, ROWS_CVERSIONS_PLUS_ONE, "1", "(V+1,): version v's clusters are Fp, stress_alpha, width, id and "
                       "state rows [version_clusters[v], version_clusters[v+1])", 0, OPT_NONE, NULL),
    [F_FP] = FIELD("/clusters/Fp", T_F64, SHAPE_MAT3, ROWS_CV_CLUSTERS, "1", "per version of the slow state (/clusters/cluster_version), plastic deformation F^p_c", 0, OPT_NONE, NULL),
    [F_ALPHA] = FIELD("/clusters/stress_alpha", T_F64, SHAPE_SCALAR, ROWS_CV_CLUSTERS, "1", "per version of the slow state, cumulative plastic stress alpha_c (Falkenstein Eq 14)", 0, OPT_NONE, NULL),
    [F_WIDTH] = FIELD("/clusters/width", T_F64, SHAPE_SCALAR, ROWS_CV_CLUSTERS, "m", "per version of the slow state, cluster width w_c = max_i |F^p_c p_ic| (Bargteil-Jones Eq 5 on the plastic rest shape)", 0, OPT_NONE, NULL),
    [F_ID] = FIELD("/clusters/id", T_I32, SHAPE_SCALAR, ROWS_CV_CLUSTERS, "1", "per version of the slow state, stable cluster id (the initial clusters are 0..k-1; added clusters count on)", 0, OPT_NONE, NULL),
    [F_STATE] = FIELD("/clusters/state", T_I32, SHAPE_SCALAR, ROWS_CV_CLUSTERS, "1", "per version of the slow state, 0 active, 1 fading out (marked for removal), 2 fading in (added)", 0, OPT_NONE, NULL),
    [F_KINETIC] = FIELD("/diagnostics/kinetic_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "sum 1/2 m |v|^2", 0, OPT_NONE, d_kinetic),
    [F_POTENTIAL] = FIELD("/diagnostics/potential_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "gravitational potential energy -sum m g.x", 0, OPT_NONE, d_potential),
    [F_ELASTIC] = FIELD("/diagnostics/elastic_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "energy the integrator's elastic terms store: with a modulus and solver.energy continuum, the clusters' corotated "
                     "strain energy of their quadratic fits plus the stabilization's spring on the residual (core/elastic.c); otherwise sum_c 1/2 k_c sum_i w_ic m_i |x_i - g_ic|^2 "
                     "with k_c = alpha_c / h^2, plus the split volume terms 1/2 kappa_c V_c (det F_c - 1)^2 (0 for pbd, which has no springs; NaN for an integrator that declares none)", 0, OPT_NONE, d_elastic),
    [F_GOAL_DISTANCE] = FIELD("/diagnostics/goal_distance", T_F64, SHAPE_SCALAR, ROWS_ONE, "kg m^2", "sum_c sum_i w_ic m_i |x_i - g_ic|^2, the mass-weighted squared distance "
                          "to the goals (what the papers minimise; logs written before elastic_energy was in J held this under that name)", 0, OPT_NONE, d_goal_distance),
    [F_WORK_EXTERNAL] = FIELD("/diagnostics/work_external", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "work done so far from outside: by the forces without a potential (compress, twist, drag) and the host's, "
                          "sum over steps of h sum_i f_i . v_i (what the colliders and contacts did is dissipated_contact's)", 0, OPT_NONE, d_work_external),
    [F_MOMENTUM] = FIELD("/diagnostics/linear_momentum", T_F64, SHAPE_VEC3, ROWS_ONE, "kg m/s", "sum m v", 0, OPT_NONE, d_momentum),
    [F_ANGULAR] = FIELD("/diagnostics/angular_momentum", T_F64, SHAPE_VEC3, ROWS_ONE, "kg m^2/s", "sum m x cross v about the world origin", 0, OPT_NONE, d_angular),
    [F_COM_ALL] = FIELD("/diagnostics/center_of_mass", T_F64, SHAPE_VEC3, ROWS_ONE, "m", "centre of mass of all particles", 0, OPT_NONE, d_com_all),
    [F_MAX_STRAIN] = FIELD("/diagnostics/max_strain", T_F64, SHAPE_SCALAR, ROWS_ONE, "1", "max over memberships of beta = |x_i - g_ic| / width_c (Bargteil-Jones Eq 4)", 0, OPT_NONE, d_max_strain),
    [F_VOLUME] = FIELD("/diagnostics/volume_ratio", T_F64, SHAPE_SCALAR, ROWS_ONE, "1", "mean det F^p over clusters", 0, OPT_NONE, d_volume),
    [F_MAX_COND_FP] = FIELD("/diagnostics/max_cond_Fp", T_F64, SHAPE_SCALAR, ROWS_ONE, "1", "largest condition number sigma_max / sigma_min of F^p over clusters", 0, OPT_NONE, d_max_cond_fp),
    [F_INVERTED] = FIELD("/diagnostics/inverted_clusters", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "clusters of full rank turned inside out: det F < 0 for the fit F = A_xr A_rr^-1 (Falkenstein Eq 3)", 0, OPT_NONE, d_inverted),
    [F_YIELDED] = FIELD("/diagnostics/yielded", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "clusters whose F^p flowed since the previous logged frame (Falkenstein Eq 11-12)", 0, OPT_NONE, d_yielded),
    [F_PLASTIC_SKIPPED] = FIELD("/diagnostics/plastic_skipped", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "plastic updates skipped since the previous logged frame on a collapsed or inverted F^e (cluster-steps)", 0, OPT_NONE, d_plastic_skipped),
    [F_GAIN] = FIELD("/diagnostics/alpha_c", T_F64, SHAPE_COLS, ROWS_ONE, "1", "min, mean and max over clusters of the spring gain alpha_c = h^2 k_c of the frame's last step "
                "(solver.alpha, or from solver.modulus; 0 without springs)", 3, OPT_NONE, d_gain),
    [F_GAIN_CLAMPED] = FIELD("/diagnostics/alpha_clamped", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "clusters whose gain from solver.modulus exceeded 1 and was clamped to 1 in the frame's last "
                        "step (the step is too coarse for the modulus)", 0, OPT_NONE, d_gain_clamped),
    [F_ITERATION_RESIDUAL] = FIELD("/diagnostics/iteration_residual", T_F64, SHAPE_SCALAR, ROWS_ONE, "1", "how far the implicit integrators' iterations were from converged, the worst step "
                               "since the previous logged frame: the last iteration's largest position change over the step's largest displacement (projective_dynamics stops "
                               "below its tolerance; xpbd runs its fixed iterations; 0 for the explicit integrators)", 0, OPT_NONE, d_iteration_residual),
    [F_ENERGY_ERROR] = FIELD("/diagnostics/energy_error", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "kinetic + potential + elastic energy + elastic_lag - frame 0's - work_external + the dissipated_* sums: "
                         "energy the simulation created (> 0) or lost without account (< 0); held over the frames in which contact acted, whose change is dissipated_contact's", 0, OPT_NONE, d_energy_error),
    [F_ELASTIC_LAG] = FIELD("/diagnostics/elastic_lag", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "(h/2) sum_i f_i . v_i of the explicit springs' forces f and of the forces with a potential (gravity, a load; 0 for xpbd and projective_dynamics): "
                        "symplectic Euler conserves kinetic + potential + elastic + this to O(h^2), not the plain sum", 0, OPT_NONE, d_elastic_lag),
    [F_DISSIPATED_DAMPING] = FIELD("/diagnostics/dissipated_damping", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "kinetic energy the integrator's damping removed so far (Mueller et al. 2007 Sec 3.5)", 0, OPT_NONE, d_dissipated_damping),
    [F_DISSIPATED_VISCOSITY] = FIELD("/diagnostics/dissipated_viscosity", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "kinetic energy the integrator's viscosity removed so far", 0, OPT_NONE, d_dissipated_viscosity),
    [F_DISSIPATED_PLASTIC] = FIELD("/diagnostics/dissipated_plastic", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "stored elastic energy the plastic flow released so far, at the positions of each step", 0, OPT_NONE, d_dissipated_plastic),
    [F_DISSIPATED_CONTACT] = FIELD("/diagnostics/dissipated_contact", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "what contact took from the bodies so far (< 0: gave them, as a moving collider does): "
                               "the energy budget's change over the logged frames in which a collider or the contacts moved a particle, the integrator's own error of those frames included", 0, OPT_NONE, d_dissipated_contact),
    [F_DISSIPATED_NUMERICAL] = FIELD("/diagnostics/dissipated_numerical", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "what implicit Euler's steps took so far (projective_dynamics; 0 for the others): "
                                 "1/2 sum m |v - v'|^2 plus the elastic energy's Bregman divergence over each step, v' the velocity the step's prediction carries", 0, OPT_NONE, d_dissipated_numerical),
    [F_RECLUSTER_ENERGY] = FIELD("/diagnostics/recluster_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "stored elastic energy reclustering's fades, additions and removals added so far (< 0: released), "
                             "at the positions of each step; part of energy_error, not of the dissipated sums", 0, OPT_NONE, d_recluster_energy),
    [F_CONTACT_PAIRS] = FIELD("/diagnostics/contact_pairs", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "pairs the contact broad phase listed in the frame's last step: of particles within twice the contact distance, or (cluster_proxies) of a particle and a cluster whose proxy it nears", 0, OPT_CONTACT, d_contact_pairs),
    [F_CONTACT_DEPTH] = FIELD("/diagnostics/contact_depth", T_F64, SHAPE_SCALAR, ROWS_ONE, "m", "the deepest overlap d - |x_i - x_j| over those pairs at the frame's end (0: none), d the contact distance (the attribute contact.distance); cluster_proxies: how deep a particle lies inside a proxy", 0, OPT_CONTACT, d_contact_depth),
    [F_CK_FRAME] = FIELD("/checkpoint/frame", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "frames computed when each logged frame was written (logged frames are every output.every-th)", 0, OPT_NONE, d_ck_frame),
    [F_CK_STEP] = FIELD("/checkpoint/step", T_I64, SHAPE_SCALAR, ROWS_ONE, "1", "steps taken", 0, OPT_NONE, d_ck_step),
    [F_CK_NEXT_ID] = FIELD("/checkpoint/next_id", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "id the next added cluster gets", 0, OPT_NONE, d_ck_next_id),
    [F_CK_VERSION] = FIELD("/checkpoint/rest_version", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "version of /checkpoint/rest the frame's clusters use", 0, OPT_NONE, d_ck_version),
    [F_CK_Q] = FIELD("/checkpoint/q", T_F64, SHAPE_COLS, ROWS_SLOTS, "1", "per cluster, in two slots (the last two logged frames; row 2c + t % 2), R_c as a unit quaternion (w, x, y, z): the warm start of the next polar decomposition", 4, OPT_NONE, d_ck_q),
    [F_CK_FADE] = FIELD("/checkpoint/fade", T_I32, SHAPE_SCALAR, ROWS_SLOTS, "1", "per cluster, in two slots (the last two logged frames; row 2c + t % 2), steps since a fading cluster was marked or added", 0, OPT_NONE, d_ck_fade),
    [F_CK_F] = FIELD("/checkpoint/F", T_F64, SHAPE_MAT3, ROWS_SLOTS, "1", "per cluster, in two slots (the last two logged frames; row 2c + t % 2), F_c = A_xr A_rr^-1 of the last fit", 0, OPT_NONE, d_ck_f),
    [F_CK_T] = FIELD("/checkpoint/T", T_F64, SHAPE_MAT3, ROWS_SLOTS, "1", "per cluster, in two slots (the last two logged frames; row 2c + t % 2), goal transform of the last fit: g_ic = T_c p_ic + com_c", 0, OPT_NONE, d_ck_t),
    [F_CK_QUAD] = FIELD("/checkpoint/Q", T_F64, SHAPE_COLS, ROWS_SLOTS, "1", "per cluster, in two slots (the last two logged frames; row 2c + t % 2), 3x6 quadratic part of the goal transform (Mueller 2005 Sec 4.3)", 18, OPT_QUADRATIC, d_ck_quad),
    [F_CK_F_LAGGED] = FIELD("/checkpoint/F_lagged", T_F64, SHAPE_MAT3, ROWS_SLOTS, "1", "per cluster, in two slots (the last two logged frames; row 2c + t % 2), F_c at the end of the previous step, the flow the next step commits with plasticity.update lagged (NaN: none yet)", 0, OPT_LAGGED, d_ck_f_lagged),
    [F_RV_CLUSTER_START] = FIELD("/checkpoint/rest/cluster_start", T_I64, SHAPE_SCALAR, ROWS_VERSIONS_PLUS_ONE, "1", "(V+1,): version v's per-cluster rows are [cluster_start[v], cluster_start[v+1])", 0, OPT_NONE, NULL),
    [F_RV_MEMBER_START] = FIELD("/checkpoint/rest/member_start", T_I64, SHAPE_SCALAR, ROWS_VERSIONS_PLUS_ONE, "1", "(V+1,): version v's per-membership rows are [member_start[v], member_start[v+1])", 0, OPT_NONE, NULL),
    [F_RV_WBASE] = FIELD("/checkpoint/rest/wbase", T_F64, SHAPE_SCALAR, ROWS_REST_MEMBERS, "1", "per version, membership weight before fading (Falkenstein Sec 3.2.1)", 0, OPT_NONE, NULL),
    [F_RV_WMASS] = FIELD("/checkpoint/rest/wmass", T_F64, SHAPE_SCALAR, ROWS_REST_MEMBERS, "kg", "per version, w_ic m_i (Falkenstein Eq 7)", 0, OPT_NONE, NULL),
    [F_RV_P] = FIELD("/checkpoint/rest/p", T_F64, SHAPE_VEC3, ROWS_REST_MEMBERS, "m", "per version, rest offset p_ic from the cluster's rest centre of mass", 0, OPT_NONE, NULL),
    [F_RV_MASS] = FIELD("/checkpoint/rest/mass", T_F64, SHAPE_SCALAR, ROWS_REST_CLUSTERS, "kg", "per version, sum_i w_ic m_i", 0, OPT_NONE, NULL),
    [F_RV_ARR] = FIELD("/checkpoint/rest/A_rr_inv", T_F64, SHAPE_MAT3, ROWS_REST_CLUSTERS, "1/(kg m^2)", "per version, pseudo-inverse of A_rr = sum_i w_ic m_i p_ic p_ic^T", 0, OPT_NONE, NULL),
    [F_RV_RANK] = FIELD("/checkpoint/rest/rank", T_I32, SHAPE_SCALAR, ROWS_REST_CLUSTERS, "1", "per version, rank of A_rr", 0, OPT_NONE, NULL),
    [F_RV_QMEAN] = FIELD("/checkpoint/rest/qmean", T_F64, SHAPE_COLS, ROWS_REST_CLUSTERS, "m^2", "per version, weighted mean of the quadratic terms of p_ic", 6, OPT_QUADRATIC, NULL),
    [F_RV_AQQ] = FIELD("/checkpoint/rest/Aqq_inv", T_F64, SHAPE_COLS, ROWS_REST_CLUSTERS, "1", "per version, 9x9 pseudo-inverse of the quadratic moment matrix", 81, OPT_QUADRATIC, NULL),
};

/* A plugin field's rows, gathered by its own accessor. */
static const void *d_plugin(const frame_ctx *c, const field_spec *f)
{
    f->plugin->get(&c->sim->w, f->state, c->scratch);
    return c->scratch;
}

static int add_field(csm_log *log, field_spec f)
{
    field_spec *grown = realloc(log->field, sizeof *grown * (size_t)(log->nfield + 1));
    hid_t *ds = realloc(log->ds, sizeof *ds * (size_t)(log->nfield + 1));
    if (grown) log->field = grown;
    if (ds) log->ds = ds;
    if (!grown || !ds) return -1;
    log->ds[log->nfield] = -1;
    log->field[log->nfield++] = f;
    return 0;
}

static const char *own(csm_log *log, const char *a, const char *b)
{
    char **grown = realloc(log->owned, sizeof *grown * (size_t)(log->nowned + 1));
    if (!grown) return NULL;
    log->owned = grown;
    size_t len = strlen(a) + strlen(b) + 1;
    char *text = malloc(len);
    if (!text) return NULL;
    snprintf(text, len, "%s%s", a, b);
    return log->owned[log->nowned++] = text;
}

static int timing_field(csm_log *log, const char *name, const char *doc, int index)
{
    const char *path = own(log, "/timings/", name);
    if (!path) return -1;
    return add_field(log, (field_spec){path, T_F64, SHAPE_SCALAR, ROWS_ONE, "s", doc, 0, OPT_NONE, d_timing, index,
                                       NULL, NULL, 0});
}

/* A plugin's field as a row of the table. */
static int plugin_field(csm_log *log, const char *plugin, const csm_log_field *lf, const void *state, csm_error *err)
{
    static const int types[] = {[CSM_FIELD_F64] = T_F64, [CSM_FIELD_I32] = T_I32, [CSM_FIELD_I64] = T_I64};
    if (!lf->name || lf->name[0] == '\0' || !lf->get || lf->width < 1 || lf->width > 81 || lf->type < CSM_FIELD_F64 ||
        lf->type > CSM_FIELD_I64 || lf->rows < CSM_ROWS_FRAME || lf->rows > CSM_ROWS_MEMBERSHIP)
        return csm_fail(err, CSM_EXIT_FAILURE, "plugin %s declares a malformed log field '%s'", plugin,
                        lf->name ? lf->name : "(no name)");
    const char *path = own(log, lf->name[0] == '/' ? "" : "/", lf->name);
    if (!path) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    for (int k = 0; k < log->nfield; k++)
        if (strcmp(log->field[k].path, path) == 0)
            return csm_fail(err, CSM_EXIT_FAILURE, "plugin %s declares the log field %s, which the log has already",
                            plugin, path);
    field_spec f = {path, types[lf->type], lf->width == 1 ? SHAPE_SCALAR : SHAPE_COLS, ROWS_ONE,
                    lf->units ? lf->units : "1", lf->description ? lf->description : "", lf->width, OPT_NONE, d_plugin,
                    0, lf, state, 1};
    if (lf->rows == CSM_ROWS_PARTICLE) f.shape = SHAPE_PARTICLES3;
    if (lf->rows == CSM_ROWS_CLUSTER) f.rows = ROWS_CLUSTERS;
    if (lf->rows == CSM_ROWS_MEMBERSHIP) f.rows = ROWS_MEMBERSHIPS;
    return add_field(log, f) ? csm_fail(err, CSM_EXIT_FAILURE, "out of memory") : 0;
}

/* Collider k's pose at the frame's time (csm_collider.pose): its centre for an even index 2k, its
   rotation for 2k + 1. */
static const void *d_collider_pose(const frame_ctx *c, const field_spec *f)
{
    const csm_stage *st = &c->sim->colliders[f->index / 2];
    double centre[3], R[9];
    ((const csm_collider *)st->plugin)->pose(st->state, c->sim->w.time, centre, R);
    if (f->index % 2) memcpy(c->scratch, R, sizeof R);
    else memcpy(c->scratch, centre, sizeof centre);
    return c->scratch;
}

/* /colliders/<k>/center and rotation, for each collider that tells its pose. */
static int collider_fields(csm_log *log, const csm_sim *sim)
{
    for (int k = 0; k < sim->ncolliders; k++) {
        const csm_collider *p = (const csm_collider *)sim->colliders[k].plugin;
        if (p->version < 3 || !p->pose) continue;
        char path[64];
        snprintf(path, sizeof path, "/colliders/%d/", k);
        const char *centre = own(log, path, "center"), *rotation = own(log, path, "rotation");
        if (!centre || !rotation ||
            add_field(log, (field_spec){centre, T_F64, SHAPE_VEC3, ROWS_ONE, "m",
                                        "per frame, where the collider's centre is (colliders[k] of the config)", 3,
                                        OPT_NONE, d_collider_pose, 2 * k, NULL, NULL, 1}) ||
            add_field(log, (field_spec){rotation, T_F64, SHAPE_MAT3, ROWS_ONE, "1",
                                        "per frame, the rotation its path has turned it by since it started (its "
                                        "rotate not included)",
                                        9, OPT_NONE, d_collider_pose, 2 * k + 1, NULL, NULL, 1}))
            return -1;
    }
    return 0;
}

static int plugin_fields(csm_log *log, const csm_plugin_head *p, const csm_log_field *lf, const void *state,
                         csm_error *err)
{
    for (int k = 0; lf && lf[k].name; k++)
        if (plugin_field(log, p->name, &lf[k], state, err)) return -1;
    return 0;
}

static herr_t list_timing(hid_t group, const char *name, const H5L_info_t *info, void *user)
{
    (void)group;
    (void)info;
    csm_log *log = user;
    for (int k = 0; k < log->nfield; k++)
        if (strncmp(log->field[k].path, "/timings/", 9) == 0 && strcmp(log->field[k].path + 9, name) == 0) return 0;
    return timing_field(log, name, "", 0) ? -1 : 0;
}

int csm_log_fields_build(csm_log *log, const csm_sim *sim, csm_error *err)
{
    for (int k = 0; k < F_NFIELDS; k++)
        if (add_field(log, csm_log_fields[k])) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    if (!sim) {
        /* a log opened to recover it: its timings, and the plugin fields it lists */
        if (H5Lexists(log->file, "/timings", H5P_DEFAULT) > 0)
            H5Literate_by_name(log->file, "/timings", H5_INDEX_NAME, H5_ITER_NATIVE, NULL, list_timing, log,
                                H5P_DEFAULT);
        char *extra = csm_log_string_attr_dup(log->file, "extra_datasets");
        for (char *save = NULL, *line = extra ? strtok_r(extra, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
            char *tab = strchr(line, '\t');
            if (!tab) continue;
            *tab = '\0';
            const char *path = own(log, "", line);
            int rows = atoi(tab + 1);
            if (path && rows >= ROWS_ONE && rows <= ROWS_MEMBERSHIPS)
                add_field(log, (field_spec){path, T_F64, SHAPE_SCALAR, rows, "", "", 0, OPT_NONE, NULL, 0, NULL, NULL, 0});
        }
        free(extra);
        return 0;
    }
    const csm_report *r = &sim->report;
    for (int k = 0; k < r->ntimings; k++)
        if (timing_field(log, r->timing_name[k], r->timing_doc[k], k)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    if (collider_fields(log, sim)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    int rc = plugin_fields(log, sim->cfg->integrator.plugin, sim->integrator->fields, sim->integrator_state, err);
    for (int k = 0; k < sim->nforces && !rc; k++)
        rc = plugin_fields(log, sim->forces[k].plugin, sim->forces[k].fields, sim->forces[k].state, err);
    for (int k = 0; k < sim->ncolliders && !rc; k++)
        rc = plugin_fields(log, sim->colliders[k].plugin, sim->colliders[k].fields, sim->colliders[k].state, err);
    if (!rc) rc = plugin_fields(log, sim->plasticity.plugin, sim->plasticity.fields, sim->plasticity.state, err);
    if (!rc) rc = plugin_fields(log, sim->recluster.plugin, sim->recluster.fields, sim->recluster.state, err);
    return rc;
}

int csm_log_fields_record(const csm_log *log)
{
    size_t len = 1, used = 0;
    for (int k = 0; k < log->nfield; k++)
        if (log->field[k].listed) len += strlen(log->field[k].path) + 8;
    if (len == 1) return 0;
    char *text = malloc(len);
    if (!text) return -1;
    text[0] = '\0';
    for (int k = 0; k < log->nfield; k++)
        if (log->field[k].listed)
            used += (size_t)snprintf(text + used, len - used, "%s\t%d\n", log->field[k].path, log->field[k].rows);
    int rc = csm_h5_attr_string(log->file, "extra_datasets", text);
    free(text);
    return rc;
}

void csm_log_fields_free(csm_log *log)
{
    for (int k = 0; k < log->nowned; k++) free(log->owned[k]);
    free(log->owned);
    free(log->field);
    free(log->ds);
    free(log->scratch);
    log->owned = NULL;
    log->field = NULL;
    log->ds = NULL;
    log->scratch = NULL;
    log->nowned = log->nfield = 0;
}

int csm_log_field_used(const csm_log *log, int k)
{
    int opt = log->field[k].opt;
    return opt == OPT_NONE || (opt == OPT_GOALS && log->goals) || (opt == OPT_QUADRATIC && log->quadratic) ||
           (opt == OPT_LAGGED && log->lagged) || (opt == OPT_CONTACT && log->contact);
}

hsize_t csm_log_field_rows(const csm_log *log, int k, const log_extent *e)
{
    if (k == F_FRAME_MEMBERSHIP || k == F_FRAME_CLUSTER) return e->T + 1;
    switch (log->field[k].rows) {
    case ROWS_CLUSTERS: return e->clusters;
    case ROWS_CLUSTERS_PLUS_ONE: return e->clusters + e->T;
    case ROWS_MEMBERSHIPS: return e->memberships;
    case ROWS_VERSIONS_PLUS_ONE: return e->versions + 1;
    case ROWS_REST_CLUSTERS: return e->rest_clusters;
    case ROWS_REST_MEMBERS: return e->rest_members;
    case ROWS_MVERSIONS_PLUS_ONE: return e->mversions + 1;
    case ROWS_MV_OFFSETS: return e->mv_offsets;
    case ROWS_MV_MEMBERS: return e->mv_members;
    case ROWS_CVERSIONS_PLUS_ONE: return e->cversions + 1;
    case ROWS_CV_CLUSTERS: return e->cv_clusters;
    case ROWS_SLOTS: return e->slots; /* at least: a slot dataset keeps the rows of the most clusters */
    default: return e->T;
    }
}

hsize_t csm_log_frame_rows(const field_spec *f, const csm_world *w)
{
    switch (f->rows) {
    case ROWS_CLUSTERS:
    case ROWS_SLOTS: return (hsize_t)w->C.k;
    case ROWS_CLUSTERS_PLUS_ONE: return (hsize_t)w->C.k + 1;
    case ROWS_MEMBERSHIPS: return (hsize_t)w->C.m;
    default: return 1;
    }
}

/* Chunks and compression. Every frame is flushed (SWMR readers see it, and a killed run keeps
   it), and a chunk flushed again after a change is written anew at the end of the file: the SWMR
   writer never reuses the space it leaves, so a compressed chunk that grows over several frames
   would leave a copy of itself per frame. A per-particle dataset's chunk holds part of one frame,
   is written once and is compressed; its particle extent is capped so that reading one particle
   over time reads chunks of 4,096 particles, not whole frames. The datasets that grow by rows
   (per frame, per cluster, per membership, per version) are not compressed, so their last chunk
   is rewritten in place; their chunks are about 8 KB (256 rows of a per-frame series), so that a
   short log does not allocate much more than it fills. */
hid_t csm_log_field_create(hid_t file, const field_spec *f, int32_t n, int compression)
{
    hsize_t dims[4] = {0, 0, 0, 0}, maxdims[4] = {H5S_UNLIMITED, 0, 0, 0}, chunk[4] = {1, 0, 0, 0};
    int rank = 1;
    hsize_t values = 1; /* per row */
    switch (f->shape) {
    case SHAPE_SCALAR: break;
    case SHAPE_VEC3: rank = 2; dims[1] = maxdims[1] = chunk[1] = values = 3; break;
    case SHAPE_MAT3: rank = 3; dims[1] = dims[2] = maxdims[1] = maxdims[2] = chunk[1] = chunk[2] = 3; values = 9; break;
    case SHAPE_PARTICLES3:
        rank = 3;
        dims[1] = maxdims[1] = (hsize_t)(n > 0 ? n : 1);
        chunk[1] = (dims[1] + (dims[1] + 4095) / 4096 - 1) / ((dims[1] + 4095) / 4096); /* equal parts */
        dims[2] = maxdims[2] = chunk[2] = (hsize_t)(f->cols > 0 ? f->cols : 3);
        break;
    case SHAPE_COLS: rank = 2; dims[1] = maxdims[1] = chunk[1] = values = (hsize_t)f->cols; break;
    }
    if (f->shape != SHAPE_PARTICLES3) {
        hsize_t rows = 8192 / (values * (f->type == T_I32 ? 4 : 8));
        chunk[0] = f->rows == ROWS_ONE || f->rows == ROWS_VERSIONS_PLUS_ONE || f->rows == ROWS_MVERSIONS_PLUS_ONE ||
                           f->rows == ROWS_CVERSIONS_PLUS_ONE
                       ? 256
                   : rows < 32 ? 32 : rows > 1024 ? 1024 : rows;
        compression = 0;
    }
    hid_t space = H5Screate_simple(rank, dims, maxdims);
    hid_t dcpl = csm_h5_chunked(rank, chunk, compression);
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

/* Bytes of one row of field f in a log of n particles. */
static double row_bytes(const field_spec *f, int32_t n)
{
    double size = f->type == T_I32 || f->type == T_F32 ? 4 : 8;
    switch (f->shape) {
    case SHAPE_VEC3: return 3 * size;
    case SHAPE_MAT3: return 9 * size;
    case SHAPE_COLS: return f->cols * size;
    case SHAPE_PARTICLES3: return (double)n * (f->cols > 0 ? f->cols : 3) * size;
    default: return size;
    }
}

double csm_log_estimate(const csm_sim *sim, double *most)
{
    const csm_config *cfg = sim->cfg;
    const csm_world *w = &sim->w;
    csm_log log = {.goals = cfg->output_goals, .quadratic = w->C.Q != NULL, .lagged = w->C.F_lagged != NULL,
                   .contact = cfg->contact.method != CSM_CONTACT_NONE};
    log.field = (field_spec *)csm_log_fields;
    double frames = (double)(cfg->frames / (cfg->output_every > 0 ? cfg->output_every : 1)) + 1;
    /* the slow state changes every frame under plasticity or reclustering, never without */
    int slow = strcmp(cfg->plasticity.plugin->name, "none") || strcmp(cfg->recluster.plugin->name, "none");
    double k = w->C.k, m = w->C.m, bytes = 0, version = 0;
    for (int f = 0; f < F_NFIELDS; f++) {
        if (!csm_log_field_used(&log, f)) continue;
        double row = row_bytes(&csm_log_fields[f], w->P.n);
        switch (csm_log_fields[f].rows) {
        case ROWS_ONE: bytes += frames * row; break;
        case ROWS_CLUSTERS: bytes += frames * k * row; break;
        case ROWS_CV_CLUSTERS: bytes += (slow ? frames : 1) * k * row; break;
        case ROWS_SLOTS: bytes += 2 * k * row; break;
        case ROWS_REST_CLUSTERS: version += k * row; break;
        case ROWS_MV_OFFSETS: version += (k + 1) * row; break;
        case ROWS_REST_MEMBERS:
        case ROWS_MV_MEMBERS: version += m * row; break;
        default: break; /* the version counts: a few rows */
        }
    }
    bytes += (CSM_TIMING_BUILTIN + 1) * frames * 8.0 + 8.0 * w->P.n * 5; /* timings, /rest */
    /* a reclustering run's memberships and rest data change while clusters fade: a version per
       frame at most */
    if (most) *most = bytes + (strcmp(cfg->recluster.plugin->name, "none") ? frames : 1) * version;
    return bytes + version;
}

/* ---- the diagnostics in process (csm.h csm_diagnostics): the /diagnostics rows of the table ---- */

static int diagnostic_width(const field_spec *f)
{
    return f->shape == SHAPE_VEC3 ? 3 : f->shape == SHAPE_COLS ? f->cols : 1;
}

/* The table's k-th /diagnostics row, or -1. */
static int diagnostic_field(int k)
{
    for (int f = 0; f < F_NFIELDS; f++)
        if (!strncmp(csm_log_fields[f].path, "/diagnostics/", 13) && k-- == 0) return f;
    return -1;
}

int csm_log_diagnostic_count(void)
{
    int n = 0;
    while (diagnostic_field(n) >= 0) n++;
    return n;
}

const char *csm_log_diagnostic_name(int k, int *width)
{
    int f = diagnostic_field(k);
    if (f < 0) return NULL;
    if (width) *width = diagnostic_width(&csm_log_fields[f]);
    return csm_log_fields[f].path + 13;
}

int csm_log_diagnostic_values(const csm_sim *sim, const csm_diag *d, double *out, int size)
{
    frame_ctx ctx = {.sim = sim, .d = d};
    int at = 0;
    for (int k = 0, f; (f = diagnostic_field(k)) >= 0; k++) {
        const field_spec *s = &csm_log_fields[f];
        int width = diagnostic_width(s);
        if (at + width > size) return -1;
        const void *v = s->data(&ctx, s);
        for (int a = 0; a < width; a++)
            out[at + a] = s->type == T_I32 ? (double)((const int32_t *)v)[a] : ((const double *)v)[a];
        at += width;
    }
    return at;
}

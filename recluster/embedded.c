/* `embedded` (Falkenstein 2017 Sec 3.2): a new cluster is placed in a locally embedded, stress-
   free space (Falkenstein Eq 21-23) by the fuzzy c-means update with every other centre held. */
#include "clustering.h"
#include "csm_math.h"
#include "engine.h"
#include "grow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { EMBEDDING_NONLINEAR, EMBEDDING_LINEAR };
enum { SOLVER_LOCAL_GLOBAL, SOLVER_JACOBI };
enum { MEMBERS_FROM_SEED_CLUSTERS, MEMBERS_FROM_EMBEDDING_SET };
enum { MEMBERSHIP_FUZZY_CMEANS, MEMBERSHIP_KERNEL };

typedef struct embedded_params {
    csm_rc_common_params common;
    int embedding, embedding_solver, compare_linear, members_from, membership;
    int32_t embedding_iterations, optimization_iterations;
    double embedding_tolerance, m, threshold, optimization_tolerance, kernel_radius;
} embedded_params;

static const csm_param_spec embedded_table[] = {
    CSM_RC_COMMON_PARAMS(embedded_params),
    CSM_P_ENUM(embedded_params, embedding, EMBEDDING_NONLINEAR, "nonlinear|linear",
               "embedded space: nonlinear (Eq 21 with rotations, Jacobi) or linear (Jones 2014, rotations ignored, "
               "LAPACKE)"),
    CSM_P_ENUM(embedded_params, embedding_solver, SOLVER_LOCAL_GLOBAL, "local_global|jacobi",
               "how the nonlinear embedding minimises Falkenstein Eq 21: local_global (fits, then particles and "
               "centres together by one linear solve; a third of the steps, same minimum) or jacobi (Falkenstein "
               "Sec 3.2.2's sweeps: fits, then each particle to the mean of its goals)"),
    CSM_P_INT(embedded_params, embedding_iterations, 1000, 1, 1e6,
              "steps (sweeps) of the nonlinear embedding at most: a cap, not the stopping rule (embedding_tolerance "
              "is); an addition that reaches it is logged with embedding_capped 1"),
    CSM_P_REAL(embedded_params, embedding_tolerance, 1e-8, 0, 1,
               "stop when a step's squared change of the particles is this fraction of the first's"),
    CSM_P_BOOL(embedded_params, compare_linear, 0,
               "also solve the linear embedding of every addition and log its Falkenstein Eq 21 energy (linear_energy of "
               "/recluster/events), for comparison"),
    CSM_P_REAL(embedded_params, m, 2, 1.01, 100, "fuzziness exponent of the cluster optimisation (as fuzzy_cmeans)"),
    CSM_P_REAL(embedded_params, threshold, 0.3, 0, 1,
               "a particle joins the new cluster when its membership is at least this fraction of its largest (as "
               "fuzzy_cmeans)"),
    CSM_P_INT(embedded_params, optimization_iterations, 20, 1, 1e6, "fuzzy c-means updates of the new centre at most"),
    CSM_P_REAL(embedded_params, optimization_tolerance, 1e-6, 0, 1, "stop when no membership changes by more than this"),
    CSM_P_ENUM(embedded_params, members_from, MEMBERS_FROM_SEED_CLUSTERS, "seed_clusters|embedding_set",
               "who may join a new cluster: seed_clusters (members of the clusters it replaces) or embedding_set "
               "(all of P_e, Falkenstein Eq 23)"),
    CSM_P_ENUM(embedded_params, membership, MEMBERSHIP_FUZZY_CMEANS, "fuzzy_cmeans|kernel",
               "how a new cluster takes its members in embedded space: fuzzy_cmeans (Falkenstein Sec 3.2.2, every other "
               "centre held) or kernel (every particle of P_e within kernel_radius of a mean-shift centre, weighted "
               "(1 - r^2/R^2)^3, so new clusters are as large as the first ones)"),
    CSM_P_REAL(embedded_params, kernel_radius, 0, 0, 1e6,
               "m: radius R of the kernel membership (0: the radius of a ball with the initial clusters' mean squared "
               "member distance, sqrt(5/3 mean |p|^2))"),
    CSM_PARAM_END,
};

/* Room for the cluster optimisation of np points and k centres. */
static int fcm_reserve(csm_rc_engine *e, int32_t np, int32_t k)
{
    return csm_grow((void **)&e->points, &e->cap_points, 3 * (int64_t)np, sizeof *e->points) ||
                   csm_grow((void **)&e->masses, &e->cap_masses, np, sizeof *e->masses) ||
                   csm_grow((void **)&e->eligible, &e->cap_eligible, np, 1) ||
                   csm_grow((void **)&e->centres, &e->cap_centres, 3 * (int64_t)k, sizeof *e->centres) ||
                   csm_grow((void **)&e->fcm_state, &e->cap_state, k, 1) ||
                   csm_grow((void **)&e->u, &e->cap_u, (int64_t)np * k, sizeof *e->u)
               ? -1
               : 0;
}

/* The kernel membership: every particle of P_e within R of a centre c in embedded space, with
   base weight b_i K_i, K_i = (1 - |e_i - c|^2 / R^2)^3 and b_i the particle's mean base weight in
   its live clusters (so at its centre the new cluster weighs like a typical one). The centre
   starts at the seed and moves by mean shift to the mass-weighted mean of e_i, each particle
   weighted by the share s_i = b_i K_i / (L_i + b_i K_i) the new cluster would take of it, L_i the
   base weights of its clusters not being removed: the centre drifts into the hole the removed
   clusters leave rather than onto well covered particles. It stops when the centre moves less
   than `optimization_tolerance` R. The seed always joins, with K at least that of 0.9 R, so it
   is left in a cluster. */
static double kernel_weight(const double e[3], const double centre[3], double R2)
{
    double d[3] = {e[0] - centre[0], e[1] - centre[1], e[2] - centre[2]}, r2 = csm_v3_dot(d, d);
    return r2 < R2 ? (1 - r2 / R2) * (1 - r2 / R2) * (1 - r2 / R2) : 0.0;
}

static void kernel_members(csm_rc_engine *e, const csm_world *w, int32_t seed)
{
    const csm_clusters *C = &w->C;
    const csm_embedding *E = &e->emb;
    double R2 = e->kernel_radius * e->kernel_radius, centre[3];
    double *b = e->masses, *L = e->u; /* the cluster optimisation's scratch, [np] each */
    memcpy(centre, &E->e[3 * seed], sizeof centre);
    for (int32_t a = 0; a < E->np; a++) {
        int32_t i = E->particle[a], live = 0;
        L[a] = 0;
        for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
            int32_t j = C->pmember[s];
            if (C->state[C->mcluster[j]] == CSM_CLUSTER_FADING_OUT) continue;
            L[a] += C->wbase[j];
            live++;
        }
        b[a] = live ? L[a] / live : 1.0; /* as csm_rc_mean_live_weight */
    }
    for (int32_t it = 0; it < e->optimization_iterations; it++) {
        double sum[3] = {0, 0, 0}, total = 0;
        for (int32_t a = 0; a < E->np; a++) {
            int32_t i = E->particle[a];
            const double *ei = &E->e[3 * i];
            double K = kernel_weight(ei, centre, R2), k = b[a] * K;
            if (!(K > 0)) continue;
            double share = w->P.mass[i] * k / (L[a] + k);
            for (int c = 0; c < 3; c++) sum[c] += share * ei[c];
            total += share;
        }
        if (!(total > 0)) break; /* nothing within R: the centre stays */
        double next[3] = {sum[0] / total, sum[1] / total, sum[2] / total};
        double d[3] = {next[0] - centre[0], next[1] - centre[1], next[2] - centre[2]};
        memcpy(centre, next, sizeof centre);
        if (csm_v3_dot(d, d) <= e->optimization_tolerance * e->optimization_tolerance * R2) break;
    }
    const double Kmin = (1 - 0.81) * (1 - 0.81) * (1 - 0.81);
    e->nnew = 0;
    for (int32_t a = 0; a < E->np; a++) {
        int32_t i = E->particle[a];
        const double *ei = &E->e[3 * i];
        double K = kernel_weight(ei, centre, R2);
        if (i == seed) K = fmax(K, Kmin);
        if (!(K > 0)) continue;
        e->new_member[e->nnew] = i; /* increasing ids, as P_e */
        e->new_wbase[e->nnew] = b[a] * K;
        memcpy(&e->new_p[3 * e->nnew], ei, 3 * sizeof(double)); /* rest shape from embedded space */
        e->nnew++;
    }
}

/* Sec 3.2.2, "Embedding Optimization" and "Cluster Optimization". */
static int build_embedded(csm_rc_engine *e, csm_world *w, int32_t seed, csm_recluster_event *ev, csm_error *err)
{
    csm_clusters *C = &w->C;
    csm_embedding *E = &e->emb;
    double t0 = csm_now();
    if (csm_embedding_set(E, C, w->P.x, seed)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for the embedding");
    if (e->compare_linear) {
        double linear;
        if (csm_embed_linear(E, C, w->svd, seed, &linear)) linear = NAN;
        ev->linear_energy = linear;
        for (int32_t a = 0; a < E->np; a++) /* start the embedding that is used from x again */
            memcpy(&E->e[3 * E->particle[a]], &w->P.x[3 * E->particle[a]], 3 * sizeof(double));
    }
    if (e->embedding_linear) {
        if (csm_embed_linear(E, C, w->svd, seed, &ev->embedding_energy))
            return csm_fail(err, CSM_EXIT_FAILURE, "linear embedding around particle %d failed (LAPACKE dposv)", seed);
        ev->embedding_iterations = 1;
    } else {
        int converged;
        ev->embedding_iterations =
            e->embedding_solver == SOLVER_JACOBI
                ? csm_embed_nonlinear(E, C, w->svd, e->embedding_iterations, e->embedding_tolerance,
                                      &ev->embedding_energy, &converged)
                : csm_embed_local_global(E, C, w->svd, e->embedding_iterations, e->embedding_tolerance,
                                         &ev->embedding_energy, &converged);
        if (ev->embedding_iterations < 0)
            return csm_fail(err, CSM_EXIT_FAILURE,
                            "local/global embedding around particle %d failed (out of memory, or its clusters carry no "
                            "weight)", seed);
        ev->embedding_capped = !converged;
    }
    w->report->timings.seconds[CSM_TIMING_EMBEDDING] += csm_now() - t0;

    /* Who may join (see members_from): every particle of P_e, or only the members of the
       seed's clusters, the ones being replaced. With many neighbours removed at once nothing
       else holds a free centre back, and over all of P_e it would drift into the middle of the
       hole they leave and take it in whole. */
    int32_t np = E->np, k = E->nc + 1;
    if (fcm_reserve(e, np, k) || csm_rc_new_reserve(e, np))
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for the cluster optimisation");
    if (e->kernel_membership) {
        kernel_members(e, w, seed);
        return 0;
    }
    memset(e->eligible, !e->from_seed_clusters, (size_t)np);
    if (e->from_seed_clusters)
        for (int32_t s = C->poff[seed]; s < C->poff[seed + 1]; s++) {
            int32_t d = C->mcluster[C->pmember[s]];
            for (int32_t j = C->offset[d]; j < C->offset[d + 1]; j++) e->eligible[E->local[C->member[j]]] = 1;
        }
    int32_t count = 0;
    for (int32_t a = 0; a < np; a++) {
        if (!e->eligible[a]) continue;
        int32_t i = E->particle[a];
        memcpy(&e->points[3 * count], &E->e[3 * i], 3 * sizeof(double));
        e->masses[count] = w->P.mass[i];
        e->new_member[count++] = i; /* increasing ids, as P_e */
    }

    /* The fuzzy c-means update in embedded space: the new centre starts at the seed, every other
       centre of C_e is held; a cluster being removed counts with weight zero (ignored), one being
       added as fully faded in (held like the rest). */
    for (int32_t a = 0; a < E->nc; a++) {
        memcpy(&e->centres[3 * a], &E->centre[3 * a], 3 * sizeof(double));
        e->fcm_state[a] = C->state[E->cluster[a]] == CSM_CLUSTER_FADING_OUT ? CSM_FCM_IGNORED : CSM_FCM_HELD;
    }
    memcpy(&e->centres[3 * E->nc], &E->e[3 * seed], 3 * sizeof(double));
    e->fcm_state[E->nc] = CSM_FCM_FREE;
    csm_fcm_iterate(e->points, e->masses, count, e->centres, k, e->fcm_state, e->m, e->optimization_tolerance,
                    e->optimization_iterations, e->u);

    /* Members: as fuzzy_cmeans does, a particle joins when its membership is at least `threshold`
       of its largest, with the weight the membership has among those it joins. The seed always
       joins, so no particle is left without a cluster when the old ones are gone. */
    e->nnew = 0;
    for (int32_t a = 0; a < count; a++) {
        const double *u = &e->u[(size_t)a * (size_t)k];
        double top = 0;
        for (int32_t c = 0; c < k; c++) top = fmax(top, u[c]);
        double cut = e->threshold * top, unew = u[E->nc], sum = 0;
        int32_t joined = 0;
        for (int32_t c = 0; c < k; c++)
            if (u[c] >= cut && u[c] > 0) {
                sum += u[c];
                joined++;
            }
        int32_t i = e->new_member[a];
        int in = unew >= cut && unew > 0;
        if (!in && i != seed) continue;
        double wbase = in ? unew / sum : (unew > 0 ? unew / (sum + unew) : 1.0 / (joined + 1));
        e->new_member[e->nnew] = i; /* nnew <= a: the list is compacted in place */
        e->new_wbase[e->nnew] = wbase;
        memcpy(&e->new_p[3 * e->nnew], &E->e[3 * i], 3 * sizeof(double)); /* rest shape from embedded space */
        e->nnew++;
    }
    return 0;
}

/* sqrt(5/3 <|p|^2>) over every membership of the clusters: the radius of a uniform ball with the
   clusters' mean squared member distance from their centres. */
static double initial_radius(const csm_clusters *C)
{
    double sum = 0;
    for (int32_t j = 0; j < C->m; j++) sum += csm_v3_dot(&C->p[3 * j], &C->p[3 * j]);
    return C->m > 0 ? sqrt(5.0 / 3.0 * sum / C->m) : 0;
}

static int embedded_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    csm_rc_engine *e;
    if (csm_rc_engine_create(cfg, w, &e, err)) return -1;
    e->build = build_embedded;
    const embedded_params *p = csm_cfg_params(cfg);
    e->embedding_linear = p->embedding == EMBEDDING_LINEAR;
    e->embedding_solver = p->embedding_solver;
    e->embedding_iterations = p->embedding_iterations;
    e->embedding_tolerance = p->embedding_tolerance;
    e->compare_linear = p->compare_linear;
    e->m = p->m;
    e->threshold = p->threshold;
    e->optimization_iterations = p->optimization_iterations;
    e->optimization_tolerance = p->optimization_tolerance;
    e->from_seed_clusters = p->members_from == MEMBERS_FROM_SEED_CLUSTERS;
    e->kernel_membership = p->membership == MEMBERSHIP_KERNEL;
    e->kernel_radius = p->kernel_radius > 0 ? p->kernel_radius : initial_radius(&w->C);
    *state = e;
    return 0;
}

const csm_reclusterer csm_reclusterer_embedded = {
    .version = 1,
    .name = "embedded",
    .summary = "Falkenstein 2017 Sec 3.2: remove clusters by cond(F^p), fade, add clusters placed in a locally "
               "optimised embedded space (Falkenstein Eq 21-23) by fuzzy c-means",
    .params = embedded_table,
    .create = embedded_create,
    .apply = csm_rc_engine_apply,
    .destroy = csm_rc_engine_destroy,
};

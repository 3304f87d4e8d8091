#include "engine.h"

#include "csm_math.h"
#include "grow.h"
#include "kernel.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The fade factor phi of Falkenstein Sec 3.2.1: a removed cluster fades out over fade_out steps,
   an added one in over fade_in. */
double csm_rc_fade_factor(const csm_rc_engine *e, int32_t state, int32_t fade)
{
    if (state == CSM_CLUSTER_FADING_OUT) return fmax(0.0, 1.0 - (double)(fade + 1) / e->fade_out);
    if (state == CSM_CLUSTER_FADING_IN) return fmin(1.0, (double)(fade + 1) / e->fade_in);
    return 1.0;
}

int csm_rc_engine_create(const csm_plugin_cfg *cfg, const csm_world *w, csm_rc_engine **out, csm_error *err)
{
    const csm_rc_common_params *p = csm_cfg_params(cfg); /* the first member of every engine table's struct */
    if (p->fade_in >= p->fade_out) { /* an added cluster comes to full weight before the one it replaces is gone */
        const csm_value *v = csm_cfg_field(cfg, offsetof(csm_rc_common_params, fade_in));
        char at[256];
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: recluster.fade_in = %d must be fewer than fade_out = %d",
                        csm_cfg_where(cfg->src, v && v->line ? v->line : cfg->line, at, sizeof at), p->fade_in,
                        p->fade_out);
    }
    csm_rc_engine *e = calloc(1, sizeof *e);
    if (!e) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    e->cond_max = p->cond_max;
    e->fade_out = p->fade_out;
    e->fade_in = p->fade_in;
    e->min_clusters = 1;
    e->max_clusters = p->max_clusters;
    if (e->max_clusters == 0) e->max_clusters = 4 * (w->C.k > 0 ? w->C.k : 1);
    *out = e;
    return 0;
}

void csm_rc_engine_destroy(void *state)
{
    csm_rc_engine *e = state;
    if (!e) return;
    free(e->new_member);
    free(e->new_wbase);
    free(e->new_p);
    free(e->touched);
    free(e->candidate);
    free(e->touch_list);
    free(e->flag);
    free(e->cond);
    free(e->energy);
    csm_embedding_free(&e->emb);
    free(e->points);
    free(e->masses);
    free(e->centres);
    free(e->u);
    free(e->fcm_state);
    free(e->eligible);
    free(e);
}

int csm_rc_new_reserve(csm_rc_engine *e, int32_t count)
{
    return csm_grow((void **)&e->new_member, &e->cap_member, count, sizeof *e->new_member) ||
                   csm_grow((void **)&e->new_wbase, &e->cap_wbase, count, sizeof *e->new_wbase) ||
                   csm_grow((void **)&e->new_p, &e->cap_p, 3 * (int64_t)count, sizeof *e->new_p)
               ? -1
               : 0;
}

double csm_rc_mean_live_weight(const csm_clusters *C, int32_t i)
{
    double sum = 0;
    int live = 0;
    for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
        int32_t j = C->pmember[s];
        if (C->state[C->mcluster[j]] == CSM_CLUSTER_FADING_OUT) continue;
        sum += C->wbase[j];
        live++;
    }
    return live ? sum / live : 1.0;
}

static int reserve_scratch(csm_rc_engine *e, const csm_clusters *C)
{
    if (C->n > e->cap_n) {
        free(e->touched);
        free(e->candidate);
        e->touched = calloc((size_t)C->n, 1);
        e->candidate = malloc((size_t)C->n);
        if (!e->touched || !e->candidate) return -1;
        e->cap_n = C->n;
    }
    if (C->cap_k > e->cap_k) {
        free(e->flag);
        free(e->cond);
        free(e->energy);
        e->flag = calloc((size_t)C->cap_k, 1);
        e->cond = malloc((size_t)C->cap_k * sizeof *e->cond);
        e->energy = malloc((size_t)C->cap_k * sizeof *e->energy);
        if (!e->flag || !e->cond || !e->energy) return -1;
        e->cap_k = C->cap_k;
    }
    return 0;
}

/* Fewer clusters that are not being removed than the engine asks for (Sec 3.2.2: "any particle
   that soon will not be a member of any cluster" when min_clusters is 1). */
static int is_candidate(const csm_rc_engine *e, const csm_clusters *C, int32_t i)
{
    int32_t live = 0;
    for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++)
        if (C->state[C->mcluster[C->pmember[s]]] != CSM_CLUSTER_FADING_OUT) live++;
    return live < e->min_clusters;
}

/* Mark particle i for renormalisation. */
static int touch(csm_rc_engine *e, int32_t i)
{
    if (e->touched[i]) return 0;
    if (csm_grow((void **)&e->touch_list, &e->cap_touch, e->ntouched + 1, sizeof *e->touch_list)) return -1;
    e->touched[i] = 1;
    e->touch_list[e->ntouched++] = i;
    return 0;
}

/* w_ic = phi_c wbase_ic / sum_d phi_d wbase_id for each touched particle (so sum_c w_ic = 1),
   then the rest data of every cluster holding one of them (p_ic back about the origin, A_rr).
   Returns -1, or a particle left with no weight in any cluster. */
static int32_t renormalise(csm_rc_engine *e, csm_world *w)
{
    csm_clusters *C = &w->C;
    memset(e->flag, 0, (size_t)C->k);
    for (int64_t t = 0; t < e->ntouched; t++) {
        int32_t i = e->touch_list[t];
        e->touched[i] = 0;
        double sum = 0;
        for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
            int32_t j = C->pmember[s], c = C->mcluster[j];
            sum += csm_rc_fade_factor(e, C->state[c], C->fade[c]) * C->wbase[j];
        }
        if (!(sum > 0)) return i;
        for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
            int32_t j = C->pmember[s], c = C->mcluster[j];
            C->weight[j] = csm_rc_fade_factor(e, C->state[c], C->fade[c]) * C->wbase[j] / sum;
            e->flag[c] = 1;
        }
    }
    int changed = e->ntouched > 0;
    e->ntouched = 0;
    /* each cluster's rest data are its own: in parallel, handed out in small runs (the flagged
       clusters bunch where the fades are) */
    int32_t k = C->k;
#pragma omp parallel for schedule(dynamic, 4)
    for (int32_t c = 0; c < k; c++)
        if (e->flag[c]) csm_cluster_rest(C, &w->P, c, NULL);
    if (changed) C->epoch++; /* weights changed: integrators that keep per-cluster data compare epochs */
    return -1;
}

static int orphan(int32_t i, csm_error *err)
{
    return csm_fail(err, CSM_EXIT_FAILURE, "reclustering left particle %d in no cluster with weight", i);
}

/* Build and append the cluster seeded at `seed`; it starts fading in. */
static int add_cluster(csm_rc_engine *e, csm_world *w, int32_t seed, csm_error *err)
{
    csm_clusters *C = &w->C;
    csm_recluster_event ev = {0, 0, CSM_EVENT_ADDED, 0, seed, 0, 1.0, NAN, 0, NAN, 0};
    if (C->k >= e->max_clusters)
        return csm_fail(err, CSM_EXIT_FAILURE,
                        "reclustering wants more than max_clusters = %d clusters at t = %g s: runaway "
                        "reclustering, the simulation has become unstable",
                        e->max_clusters, w->time);
    if (e->build(e, w, seed, &ev, err)) return -1;
    int32_t c = csm_clusters_append(C, e->nnew, e->new_member, e->new_wbase, e->new_p);
    if (c < 0 || csm_clusters_relink(C) || reserve_scratch(e, C))
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for reclustering");
    C->state[c] = CSM_CLUSTER_FADING_IN;
    C->fade[c] = 0;
    for (int32_t a = 0; a < e->nnew; a++)
        if (touch(e, e->new_member[a])) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for reclustering");
    int32_t left = renormalise(e, w);
    if (left >= 0) return orphan(left, err);
    ev.cluster = C->id[c];
    ev.members = e->nnew;
    if (csm_world_event(w, ev)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for reclustering events");
    return 0;
}

/* Every cluster's stored energy at the step's positions: reclustering's share of the energy
   budget is its change across a pass that moves weights. The clusters' energies in parallel,
   their sum in cluster order. */
static double stored_energy(const csm_rc_engine *e, const csm_world *w, double h)
{
    int32_t k = w->C.k;
    double *each = e->energy, sum = 0;
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < k; c++) each[c] = csm_cluster_energy(w, c, w->P.x, w->P.v, h);
    for (int32_t c = 0; c < k; c++) sum += each[c];
    return sum;
}

static int apply(csm_rc_engine *e, csm_world *w, double h, double *before, csm_error *err);

int csm_rc_engine_apply(csm_world *w, void *state, double h, csm_error *err)
{
    double before = NAN;
    int rc = apply(state, w, h, &before, err);
    if (rc == 0 && !isnan(before) && w->report) w->report->recluster_energy += stored_energy(state, w, h) - before;
    return rc;
}

/* The pass; *before is set to the stored energy just before the first weight changes, and left
   NaN when none change. */
static int apply(csm_rc_engine *e, csm_world *w, double h, double *before, csm_error *err)
{
    csm_clusters *C = &w->C;
    if (reserve_scratch(e, C)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for reclustering");

    /* Fades move on by one step. */
    for (int32_t c = 0; c < C->k; c++)
        if (C->state[c] != CSM_CLUSTER_ACTIVE) C->fade[c]++;

    /* Sec 3.2.1: mark a cluster whose rest shape has become too distorted, cond(F^p) > cond_max.
       The condition numbers in parallel, the marks (and their events) in cluster order. */
    int32_t k = C->k;
    double *conds = e->cond;
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < k; c++) {
        if (C->state[c] == CSM_CLUSTER_FADING_OUT) continue;
        double U[9], s[3], V[9];
        w->svd(&C->Fp[9 * c], U, s, V);
        conds[c] = fabs(s[2]) > 0 ? s[0] / fabs(s[2]) : INFINITY;
    }
    for (int32_t c = 0; c < k; c++) {
        if (C->state[c] == CSM_CLUSTER_FADING_OUT) continue;
        double cond = conds[c];
        if (!(cond > e->cond_max)) continue;
        C->state[c] = CSM_CLUSTER_FADING_OUT;
        C->fade[c] = 0;
        csm_recluster_event ev = {0, 0, CSM_EVENT_REMOVED, C->id[c], -1, C->offset[c + 1] - C->offset[c], cond, NAN, 0, NAN, 0};
        if (csm_world_event(w, ev)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for reclustering events");
    }

    /* Sec 3.2.2: particles about to be left without a cluster seed new ones, in particle order;
       a particle a new cluster took in is no longer a candidate. An addition only adds live
       memberships, so no particle becomes a candidate: the first test runs in parallel, and
       the test in order repeats it for those that passed. */
    int32_t n = w->P.n;
    unsigned char *candidate = e->candidate;
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++) candidate[i] = (unsigned char)is_candidate(e, C, i);
    for (int32_t i = 0; i < n; i++) {
        if (!candidate[i] || !is_candidate(e, C, i)) continue;
        if (isnan(*before)) *before = stored_energy(e, w, h);
        if (add_cluster(e, w, i, err)) return -1;
    }

    /* Weights of every particle in a fading cluster change; fades that are complete end. */
    for (int32_t c = 0; c < C->k && isnan(*before); c++)
        if (C->state[c] != CSM_CLUSTER_ACTIVE) *before = stored_energy(e, w, h);
    int any_drop = 0;
    for (int32_t c = 0; c < C->k; c++) {
        e->flag[c] = 0;
        if (C->state[c] == CSM_CLUSTER_ACTIVE) continue;
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++)
            if (touch(e, C->member[j])) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for reclustering");
        if (C->state[c] == CSM_CLUSTER_FADING_IN && C->fade[c] + 1 >= e->fade_in) {
            C->state[c] = CSM_CLUSTER_ACTIVE;
            C->fade[c] = 0;
        }
        if (C->state[c] == CSM_CLUSTER_FADING_OUT && C->fade[c] + 1 >= e->fade_out) {
            e->flag[c] = 1;
            any_drop = 1;
        }
    }
    if (any_drop) {
        csm_clusters_remove(C, e->flag);
        csm_clusters_relink(C);
    }
    int32_t left = renormalise(e, w);
    return left >= 0 ? orphan(left, err) : 0;
}

/* A simulation built from a config (csm_sim_create): each object sampled and placed, the particles'
   masses and volumes, the clusters, the world's solver settings and every plugin's stage; and torn
   down (csm_sim_destroy). The frame loop is in sim.c. */

#include "sim.h"
#include "error.h"

#include "clustering.h"
#include "csm_math.h"
#include "geometry.h"
#include "kernel.h"
#include "modes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Place one object's samples: rest = position + s, x = position + c + D (s - c) about the
   centroid c, v = velocity + omega x (x - x_c). The object's mass is shared in proportion to
   share[k] (each sample's volume, sampling.mass: volume), or equally when share is NULL. */
/* How far inside the shape point p lies along direction b (a particle's share of the surface, not
   normalised), to a thousandth of the spacing h: 0 on the surface, at most h. */
static double surface_depth(const csm_shape *sh, const double p[3], const double b[3], double h)
{
    double len = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]), lo = 0, hi = h;
    if (!(len > 0)) return 0;
    double q[3];
    for (int d = 0; d < 3; d++) q[d] = p[d] + hi * b[d] / len;
    if (csm_shape_inside(sh, q)) return h;
    while (hi - lo > 1e-3 * h) { /* inside at lo (or on the surface), outside at hi */
        double mid = 0.5 * (lo + hi);
        for (int d = 0; d < 3; d++) q[d] = p[d] + mid * b[d] / len;
        if (csm_shape_inside(sh, q)) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

static void place_object(const csm_object_cfg *o, const double *s, const double *share, int32_t count, double volume,
                         csm_particles *P, int32_t first, int32_t object)
{
    const csm_body_params *b = csm_cfg_params(&o->body);
    const double *pos = b->position, *D = b->deform;
    const double *vel = b->velocity, *omega = b->angular_velocity;
    double density = b->density;
    double total = density > 0 && volume > 0 ? density * volume : b->mass;
    double c[3] = {0, 0, 0}, shares = 0;
    for (int32_t k = 0; k < count; k++)
        for (int d = 0; d < 3; d++) c[d] += s[3 * k + d] / count;
    for (int32_t k = 0; share && k < count; k++) shares += share[k];
    for (int32_t k = 0; k < count; k++) {
        int32_t i = first + k;
        double rel[3] = {s[3 * k] - c[0], s[3 * k + 1] - c[1], s[3 * k + 2] - c[2]}, def[3];
        csm_m3_mul_v3(D, rel, def);
        for (int d = 0; d < 3; d++) {
            P->rest[3 * i + d] = pos[d] + s[3 * k + d];
            P->x[3 * i + d] = pos[d] + c[d] + def[d];
        }
        double w[3];
        csm_v3_cross(omega, def, w);
        for (int d = 0; d < 3; d++) P->v[3 * i + d] = vel[d] + w[d];
        P->mass[i] = share ? total * (share[k] / shares) : total / count;
        P->inv_mass[i] = 1.0 / P->mass[i];
        P->object[i] = object;
        for (int side = 0; side < 2; side++) {
            int axis = o->pin_axis[side];
            if (axis < 0) continue;
            double coord = P->x[3 * i + axis];
            if ((side == 0 && coord < o->pin_value[side]) || (side == 1 && coord > o->pin_value[side])) {
                P->inv_mass[i] = 0.0;
                P->v[3 * i] = P->v[3 * i + 1] = P->v[3 * i + 2] = 0.0;
            }
        }
    }
    for (int k = 0; k < o->npin_index; k++) { /* indices were checked against count */
        int32_t i = first + o->pin_index[k];
        P->inv_mass[i] = 0.0;
        P->v[3 * i] = P->v[3 * i + 1] = P->v[3 * i + 2] = 0.0;
    }
}

/* The loop's view of a force, collider, plasticity model or reclusterer: each kind is its own
   struct, with the same functions after the head. */
#define STAGE_OF(T, head, out)                                                                     \
    do {                                                                                           \
        const T *p_ = (const T *)(head);                                                           \
        (out)->plugin = (head);                                                                    \
        (out)->apply = p_->apply;                                                                  \
        (out)->destroy = p_->destroy;                                                              \
        (out)->fields = p_->fields;                                                                \
        create = p_->create;                                                                       \
    } while (0)

static int create_stage(csm_kind kind, const csm_plugin_cfg *pc, const csm_world *w, csm_stage *st, csm_error *err)
{
    int (*create)(const csm_plugin_cfg *, const csm_world *, void **, csm_error *) = NULL;
    memset(st, 0, sizeof *st);
    switch (kind) {
    case CSM_KIND_FORCE:
        STAGE_OF(csm_force, pc->plugin, st);
        st->potential = ((const csm_force *)pc->plugin)->potential;
        break;
    case CSM_KIND_COLLIDER:
        STAGE_OF(csm_collider, pc->plugin, st);
        if (((const csm_collider *)pc->plugin)->version >= 2) st->project = ((const csm_collider *)pc->plugin)->project;
        break;
    case CSM_KIND_PLASTICITY: STAGE_OF(csm_plasticity, pc->plugin, st); break;
    case CSM_KIND_RECLUSTERER: STAGE_OF(csm_reclusterer, pc->plugin, st); break;
    default: return csm_fail(err, CSM_EXIT_FAILURE, "%s is not a stage", csm_kind_name(kind));
    }
    return create ? create(pc, w, &st->state, err) : 0;
}

static void destroy_stage(csm_stage *st)
{
    if (st->destroy && st->state) st->destroy(st->state);
    memset(st, 0, sizeof *st);
}

int csm_sim_create(const csm_config *cfg, csm_sim *sim, csm_error *err)
{
    memset(sim, 0, sizeof *sim);
    sim->cfg = cfg;
    csm_world *w = &sim->w;
    csm_report_init(&sim->report);
    w->report = &sim->report;
    w->rotation = (const csm_rotation *)cfg->rotation.plugin;
    w->svd = cfg->svd == CSM_SVD_LAPACKE ? csm_svd3_lapacke : csm_svd3_fast;
    w->mode = cfg->mode;
    w->beta = cfg->beta;
    w->conserve = cfg->conserve;
    w->lanes = cfg->lanes;
    /* solver.volume: auto splits shape from volume where plasticity can change the rest shape
       (a coupled goal turns the flow's flattening into stored volume energy, see plasticity/)
       and the integrator projects volume; config loading refused an explicit split it cannot run */
    const csm_integrator *in = (const csm_integrator *)cfg->integrator.plugin;
    int projects = in->version >= 3 && in->projects_volume;
    int plastic = 0, lagged = 0;
    for (int k = 0; k < cfg->nobjects; k++) { /* the model each object runs */
        const csm_plugin_cfg *pc = cfg->objects[k].own_plasticity ? &cfg->objects[k].plasticity : &cfg->plasticity;
        plastic |= strcmp(pc->plugin->name, "none") != 0;
        lagged |= csm_plasticity_lagged(pc);
    }
    w->volume = cfg->volume == CSM_VOLUME_AUTO
                    ? (plastic && projects && cfg->mode == CSM_MODE_RIGID ? CSM_VOLUME_SPLIT : CSM_VOLUME_COUPLED)
                    : cfg->volume;
    w->bulk_modulus = cfg->bulk_modulus;
    w->energy = cfg->energy;
    w->stabilization = cfg->stabilization;
    w->gradient = cfg->gradient;
    w->material = cfg->material;
    csm_integrator_traits springs;
    csm_integrator_describe(&cfg->integrator, &springs);
    w->spring_alpha = springs.alpha;
    w->spring_modulus = springs.modulus;
    w->spring_capped = springs.clamped; /* the explicit integrators clamp alpha_c = h^2 k_c at 1 */

    /* the surface areas of the particles, for the continuum energy's consistent gradients (elastic.c) */
    int consistent = w->energy == CSM_ENERGY_CONTINUUM && w->gradient == CSM_GRADIENT_CONSISTENT && w->spring_modulus > 0;
    /* and their surface normals and depths, for particle contact against a surface (contact_surface.c)
       and for the proxies, which reach the surface (contact_proxies.c) */
    int surfaces = (cfg->contact.method == CSM_CONTACT_PARTICLES && cfg->contact.normal == CSM_NORMAL_SURFACE) ||
                   cfg->contact.method == CSM_CONTACT_PROXIES;

    /* Sample every object first to know n. */
    double **pts = calloc((size_t)cfg->nobjects, sizeof *pts);
    int32_t *counts = calloc((size_t)cfg->nobjects, sizeof *counts);
    double *volumes = calloc((size_t)cfg->nobjects, sizeof *volumes);
    double **shares = calloc((size_t)cfg->nobjects, sizeof *shares); /* sampling.mass: volume */
    w->object_first = calloc((size_t)cfg->nobjects + 1, sizeof *w->object_first);
    w->object_spacing = calloc((size_t)cfg->nobjects, sizeof *w->object_spacing);
    w->object_density = calloc((size_t)cfg->nobjects, sizeof *w->object_density);
    w->object_modulus = calloc((size_t)cfg->nobjects, sizeof *w->object_modulus);
    if (!pts || !counts || !volumes || !shares || !w->object_first || !w->object_spacing || !w->object_density ||
        !w->object_modulus)
        CSM_OUT_OF_MEMORY();
    for (int k = 0; k < cfg->nobjects; k++)
        w->object_modulus[k] = ((const csm_body_params *)csm_cfg_params(&cfg->objects[k].body))->modulus;
    int rc = 0;
    int64_t n = 0;
    /* an object whose mesh an earlier one loaded, placed the same way, samples that one; a loaded
       mesh is closed once the last object that shares it is sampled (last[k]: that object, -1
       once closed) */
    csm_shape *shapes = calloc((size_t)cfg->nobjects, sizeof *shapes);
    int *last = malloc(sizeof *last * (size_t)(cfg->nobjects > 0 ? cfg->nobjects : 1));
    if (!shapes || !last) CSM_OUT_OF_MEMORY();
    for (int k = 0; k < cfg->nobjects; k++) last[k] = -1;
    for (int k = 0; k < cfg->nobjects && !rc; k++) {
        int from = 0; /* the object whose loaded mesh k samples */
        while (from < k && !(last[from] >= k && csm_shape_same_mesh(&cfg->objects[from], &cfg->objects[k]))) from++;
        if (from < k) {
            shapes[k] = shapes[from];
            shapes[k].o = &cfg->objects[k];
        } else {
            rc = csm_shape_open(&shapes[k], &cfg->objects[k], k, err);
            if (!rc) last[k] = k;
            for (int l = k + 1; l < cfg->nobjects && !rc; l++)
                if (csm_shape_same_mesh(&cfg->objects[k], &cfg->objects[l])) last[k] = l;
        }
        volumes[k] = shapes[k].volume;
        if (!rc) rc = csm_sample_shape(&shapes[k], k, cfg->seed, &pts[k], &counts[k], &w->object_spacing[k], err);
        const csm_object_cfg *ok = &cfg->objects[k];
        int by_volume = ((const csm_sampling_params *)csm_cfg_params(&ok->sampling))->mass == CSM_MASS_VOLUME;
        if (!rc && ok->shape_type != CSM_SHAPE_POINTS && (by_volume || consistent || surfaces)) {
            /* the volumes, then the areas, then the cells' moments */
            shares[k] = malloc(sizeof *shares[k] * 14 * (size_t)counts[k]);
            if (!shares[k] || csm_sample_volumes(&shapes[k], pts[k], counts[k], w->object_spacing[k], shares[k],
                                                 shares[k] + counts[k], shares[k] + 4 * (size_t)counts[k]))
                rc = csm_fail(err, CSM_EXIT_FAILURE, "out of memory for the volumes of objects[%d]'s particles", k);
            for (int32_t i = 0; i < counts[k] && !rc && surfaces; i++) /* then each one's depth */
                shares[k][13 * (size_t)counts[k] + i] =
                    surface_depth(&shapes[k], &pts[k][3 * i], &shares[k][counts[k] + 3 * (size_t)i], w->object_spacing[k]);
        }
        if (last[from] == k) {
            csm_shape_close(&shapes[from]);
            last[from] = -1;
        }
        n += counts[k];
        w->object_first[k + 1] = (int32_t)n;
        const csm_object_cfg *o = &cfg->objects[k];
        for (int j = 0; j < o->npin_index && !rc; j++)
            if (o->pin_index[j] >= counts[k])
                rc = csm_fail(err, CSM_EXIT_BAD_INPUT,
                              "%s:%d: objects[%d].pinned.indices: index %d, but the object has %d particles",
                              cfg->file, o->line, k, o->pin_index[j], counts[k]);
    }
    for (int k = 0; k < cfg->nobjects; k++)
        if (last[k] >= 0) csm_shape_close(&shapes[k]);
    free(shapes);
    free(last);
    if (!rc && n > INT32_MAX / 4) rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "too many particles (%lld)", (long long)n);
    if (!rc && csm_particles_alloc(&w->P, (int32_t)n)) rc = csm_fail(err, CSM_EXIT_FAILURE, "out of memory for %lld particles", (long long)n);
    w->nobjects = cfg->nobjects;
    for (int k = 0; k < cfg->nobjects && !rc; k++) {
        int by_volume = ((const csm_sampling_params *)csm_cfg_params(&cfg->objects[k].sampling))->mass == CSM_MASS_VOLUME;
        place_object(&cfg->objects[k], pts[k], by_volume ? shares[k] : NULL, counts[k], volumes[k], &w->P,
                     w->object_first[k], k);
        double total = 0;
        for (int32_t i = w->object_first[k]; i < w->object_first[k + 1]; i++) total += w->P.mass[i];
        w->object_density[k] = volumes[k] > 0 ? total / volumes[k] : 0.0;
    }
    w->boundary = consistent ? malloc(sizeof *w->boundary * 3 * (size_t)(w->P.n > 0 ? w->P.n : 1)) : NULL;
    if (consistent && !w->boundary) rc = csm_fail(err, CSM_EXIT_FAILURE, "out of memory for %d particles", w->P.n);
    for (int k = 0; k < cfg->nobjects && !rc && consistent; k++)
        for (int32_t i = 0; i < counts[k]; i++)
            for (int d = 0; d < 3; d++)
                w->boundary[3 * (w->object_first[k] + i) + d] = shares[k] ? shares[k][counts[k] + 3 * i + d] : NAN;
    w->surface = surfaces ? calloc(4 * (size_t)(w->P.n > 0 ? w->P.n : 1), sizeof *w->surface) : NULL;
    if (surfaces && !w->surface) rc = csm_fail(err, CSM_EXIT_FAILURE, "out of memory for %d particles", w->P.n);
    for (int k = 0; k < cfg->nobjects && !rc && surfaces; k++)
        for (int32_t i = 0; i < counts[k] && shares[k]; i++) {
            /* a particle whose cell has at least a twentieth of a face of the spacing's cube on the
               surface is a surface particle, its normal its share's direction */
            const double *b = &shares[k][counts[k] + 3 * (size_t)i];
            double len = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]), h = w->object_spacing[k];
            double *out = &w->surface[4 * (size_t)(w->object_first[k] + i)];
            if (len > 0.05 * h * h) {
                for (int d = 0; d < 3; d++) out[d] = b[d] / len;
                out[3] = shares[k][13 * (size_t)counts[k] + i];
            }
        }
    /* the continuum energy integrates each particle's cell (csm_cell_points) where the particles
       carry their cells' volumes; elsewhere a particle is its cell's one quadrature point */
    int cells = 0;
    for (int k = 0; k < cfg->nobjects; k++)
        cells |= shares[k] && ((const csm_sampling_params *)csm_cfg_params(&cfg->objects[k].sampling))->mass ==
                                  CSM_MASS_VOLUME;
    if (!rc && cells && !(w->P.cell = malloc(sizeof *w->P.cell * 3 * CSM_CELL_POINTS * (size_t)w->P.n)))
        rc = csm_fail(err, CSM_EXIT_FAILURE, "out of memory for %d particles", w->P.n);
    for (int k = 0; k < cfg->nobjects && !rc && cells; k++) {
        int by_volume = ((const csm_sampling_params *)csm_cfg_params(&cfg->objects[k].sampling))->mass == CSM_MASS_VOLUME;
        for (int32_t i = 0; i < counts[k]; i++) {
            double *out = &w->P.cell[3 * CSM_CELL_POINTS * (size_t)(w->object_first[k] + i)];
            if (shares[k] && by_volume) csm_cell_points(&shares[k][4 * (size_t)counts[k] + 9 * (size_t)i], out);
            else memset(out, 0, sizeof *out * 3 * CSM_CELL_POINTS);
        }
    }
    for (int k = 0; k < cfg->nobjects; k++) {
        free(pts[k]);
        free(shares[k]);
    }
    free(pts);
    free(shares);
    free(counts);
    free(volumes);
    if (rc) {
        csm_sim_destroy(sim);
        return -1;
    }

    /* Clusters never span objects: each object is clustered on its own, by its own clustering
       section where it has one. */
    csm_cluster_builder b;
    csm_builder_init(&b);
    for (int k = 0; k < cfg->nobjects && !rc; k++) {
        const csm_plugin_cfg *pc = cfg->objects[k].own_clustering ? &cfg->objects[k].clustering : &cfg->clustering;
        int32_t k0 = b.k, first = w->object_first[k], count = w->object_first[k + 1] - first;
        rc = ((const csm_clustering *)pc->plugin)->build(pc, &w->P, first, count, cfg->seed, &b, err);
        /* one body per object: pieces of clusters that share no particle are joined */
        int32_t pk = 0, pn = 0, joined = rc ? 0 : csm_builder_connect(&b, k0, w->P.rest, first, count, &pk, &pn);
        if (joined && !w->joined_pieces) w->joined_object = k, w->joined_clusters = pk, w->joined_particles = pn;
        w->joined_pieces += joined;
    }
    if (!rc) {
        int degenerate = csm_clusters_from_builder(&w->C, &b, &w->P);
        if (degenerate < 0) rc = csm_fail(err, CSM_EXIT_FAILURE, "out of memory for clusters");
        w->degenerate_clusters = degenerate < 0 ? 0 : degenerate;
    }
    csm_builder_free(&b);
    if (rc) {
        csm_sim_destroy(sim);
        return -1;
    }
    for (int32_t i = 0; i < w->P.n && !rc; i++)
        if (w->C.poff[i] == w->C.poff[i + 1]) {
            const csm_object_cfg *o = &cfg->objects[w->P.object[i]];
            rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "clustering %s left particle %d in no cluster",
                          (o->own_clustering ? &o->clustering : &cfg->clustering)->plugin->name, i);
        }

    /* the quadratic rest data of the quadratic mode or the continuum energy, before any stiffness
       is asked for (elastic.c) */
    if (!rc) csm_mode_ready(w);
    sim->integrator = (const csm_integrator *)cfg->integrator.plugin;
    if (!rc && sim->integrator->create)
        rc = sim->integrator->create(&cfg->integrator, w, &sim->integrator_state, err);
    sim->nforces = cfg->nforces;
    sim->ncolliders = cfg->ncolliders;
    sim->forces = calloc((size_t)cfg->nforces + 1, sizeof *sim->forces);
    sim->colliders = calloc((size_t)cfg->ncolliders + 1, sizeof *sim->colliders);
    if (!sim->forces || !sim->colliders) CSM_OUT_OF_MEMORY();
    for (int k = 0; k < cfg->nforces && !rc; k++)
        rc = create_stage(CSM_KIND_FORCE, &cfg->forces[k], w, &sim->forces[k], err);
    for (int k = 0; k < cfg->ncolliders && !rc; k++)
        rc = create_stage(CSM_KIND_COLLIDER, &cfg->colliders[k], w, &sim->colliders[k], err);
    sim->constraints = calloc(1, sizeof *sim->constraints);
    if (!sim->constraints) CSM_OUT_OF_MEMORY();
    csm_constraints *k = sim->constraints;
    k->colliders = sim->colliders;
    k->ncolliders = sim->ncolliders;
    k->step = -1;
    for (int c = 0; c < cfg->ncolliders && !rc; c++) k->nprojecting += sim->colliders[c].project != NULL;
    k->contact = cfg->contact.method != CSM_CONTACT_NONE;
    k->timing = -1;
    if (!rc && k->contact) {
        rc = csm_contacts_init(&k->contacts, &cfg->contact, w, err);
        k->timing = csm_report_timing(w->report, "contact",
                                      "contact between particles: the broad phase and the projections of the pairs "
                                      "(part of dynamics)");
    }
    if (k->nprojecting || k->contact) w->constraints = k;
    if (!rc) rc = create_stage(CSM_KIND_PLASTICITY, &cfg->plasticity, w, &sim->plasticity, err);
    for (int o = 0; o < cfg->nobjects && !rc; o++) {
        if (!cfg->objects[o].own_plasticity) continue;
        if (!sim->own_plasticity) {
            sim->own_plasticity = calloc((size_t)cfg->nobjects, sizeof *sim->own_plasticity);
            sim->scope = calloc(2 * (size_t)cfg->nobjects, 1);
            if (!sim->own_plasticity || !sim->scope) CSM_OUT_OF_MEMORY();
        }
        rc = create_stage(CSM_KIND_PLASTICITY, &cfg->objects[o].plasticity, w, &sim->own_plasticity[o], err);
    }
    for (int o = 0; o < cfg->nobjects && sim->scope; o++) sim->scope[o] = !cfg->objects[o].own_plasticity;
    /* plasticity.update: lagged keeps each cluster's F from one step to the next */
    if (!rc && lagged && csm_clusters_lagged(&w->C)) rc = csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    if (!rc) rc = create_stage(CSM_KIND_RECLUSTERER, &cfg->recluster, w, &sim->recluster, err);
    if (rc) {
        csm_sim_destroy(sim);
        return -1;
    }
    /* The first fit, so frame 0 logs R and com of the initial state. */
    csm_fit_all(w, w->P.x);
    return 0;
}

void csm_sim_destroy(csm_sim *sim)
{
    if (sim->integrator && sim->integrator->destroy && sim->integrator_state)
        sim->integrator->destroy(sim->integrator_state);
    for (int k = 0; k < sim->nforces && sim->forces; k++) destroy_stage(&sim->forces[k]);
    for (int k = 0; k < sim->ncolliders && sim->colliders; k++) destroy_stage(&sim->colliders[k]);
    destroy_stage(&sim->plasticity);
    for (int k = 0; k < sim->w.nobjects && sim->own_plasticity; k++) destroy_stage(&sim->own_plasticity[k]);
    free(sim->own_plasticity);
    free(sim->scope);
    destroy_stage(&sim->recluster);
    free(sim->forces);
    free(sim->colliders);
    if (sim->constraints) {
        csm_contacts_free(&sim->constraints->contacts);
        free(sim->constraints->scratch);
        free(sim->constraints->x_start);
        free(sim->constraints->v_start);
        free(sim->constraints);
    }
    free(sim->distance);
    free(sim->work_force);
    free(sim->collider_before);
    free(sim->force_before);
    free(sim->potential_force);
    csm_particles_free(&sim->w.P);
    csm_clusters_free(&sim->w.C);
    csm_report_free(&sim->report);
    free(sim->w.object_first);
    free(sim->w.object_spacing);
    free(sim->w.boundary);
    free(sim->w.surface);
    free(sim->w.object_density);
    free(sim->w.object_modulus);
    free(sim->external_force);
    memset(sim, 0, sizeof *sim);
}

/* The frame loop: a step's stages in order (forces, integrator, plasticity, reclustering,
   colliders) with the energy each one moves accounted for, a frame's steps and the checks that
   stop a run that blew up, and the diagnostics of a frame. Building a simulation is in
   sim_setup.c. */

#include "sim.h"

#include "csm_math.h"
#include "elastic.h"
#include "grow.h"
#include "kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int apply_stage(csm_stage *st, csm_world *w, double h, csm_error *err)
{
    return st->apply ? st->apply(w, st->state, h, err) : 0;
}

/* The plasticity models: the top-level one, on every object without its own, then each object's
   own, on that object alone (csm_world.scope). */
static int plastic_flow(csm_sim *sim, double h, csm_error *err)
{
    csm_world *w = &sim->w;
    if (!sim->scope) return apply_stage(&sim->plasticity, w, h, err);
    int32_t n = w->nobjects;
    w->scope = sim->scope;
    int rc = apply_stage(&sim->plasticity, w, h, err);
    for (int32_t k = 0; k < n && !rc; k++) {
        if (!sim->own_plasticity[k].plugin) continue;
        memset(sim->scope + n, 0, (size_t)n);
        sim->scope[n + k] = 1;
        w->scope = sim->scope + n;
        rc = apply_stage(&sim->own_plasticity[k], w, h, err);
    }
    w->scope = NULL;
    return rc;
}

/* Whether the step's colliders changed any particle's position or velocity (before[6n]: x and v
   as the integrator left them): a step in which contact acted, whose change of energy is
   contact's (csm_diagnostics). */
static int colliders_acted(const csm_sim *sim, const double *before)
{
    const csm_particles *P = &sim->w.P;
    size_t bytes = sizeof(double) * 3 * (size_t)P->n;
    return memcmp(P->x, before, bytes) != 0 || memcmp(P->v, before + 3 * (size_t)P->n, bytes) != 0;
}

static void colliders_project(csm_world *w, csm_constraints *k, double *x, double h)
{
    for (int c = 0; c < k->ncolliders; c++) {
        const csm_stage *st = &k->colliders[c];
        if (!st->project) continue;
        double work = st->project(w, st->state, h, x);
        if (isnan(work))
            k->failed = 1;
        else
            k->work += work;
    }
}

/* The colliders, the contacts, and the colliders again: the contacts move whole clusters and
   bodies (a proxy's push, the hold), which can carry a particle into a collider or along it
   after the collider's friction has taken back its slip. Two cubes of cluster_proxies on the
   ground: the lower one's bottom particles left the steps sliding along the ground, one at a
   time, at up to 0.02 m/s (4.5e-6 J from 2 s on; 2.7e-7 J with the colliders last). */
void csm_world_project(csm_world *w, double *x, double h)
{
    csm_constraints *k = w->constraints;
    if (!k) return;
    double t0 = k->contact ? csm_now() : 0;
    if (k->step != w->step) {
        k->step = w->step;
        if (k->contact && csm_contacts_find(&k->contacts, w, x)) k->failed = 1;
    }
    colliders_project(w, k, x, h);
    if (k->contact && !k->failed && csm_contacts_project(&k->contacts, w, x)) k->failed = 1;
    if (k->contact && !k->failed) colliders_project(w, k, x, h);
    if (k->contact && k->timing >= 0 && w->report) w->report->timings.seconds[k->timing] += csm_now() - t0;
}

/* After the integrator: an integrator that never called csm_world_project (a plugin's own) meets
   the constraints once, after its step, with the velocities changed by what they moved. */
static int project_after(csm_sim *sim, double h)
{
    csm_world *w = &sim->w;
    csm_constraints *k = w->constraints;
    if (!k || k->step == w->step) return 0;
    csm_particles *P = &w->P;
    int64_t m = 3 * (int64_t)P->n;
    if (csm_grow((void **)&k->scratch, &k->cap_scratch, m, sizeof(double))) return -1;
    memcpy(k->scratch, P->x, sizeof(double) * (size_t)m);
    csm_world_project(w, P->x, h);
    for (int64_t a = 0; a < m; a++) P->v[a] += (P->x[a] - k->scratch[a]) / h;
    return 0;
}

/* Whether the host set a force on any particle (an array of zeros adds nothing, not even the sign
   of a zero). */
static int external_force_on(const csm_sim *sim)
{
    if (!sim->external_force) return 0;
    for (int64_t a = 0; a < 3 * (int64_t)sim->w.P.n; a++)
        if (sim->external_force[a] != 0.0) return 1;
    return 0;
}

int csm_sim_step(csm_sim *sim, double h, csm_error *err)
{
    csm_world *w = &sim->w;
    double *seconds = sim->report.timings.seconds;
    double t0 = csm_now();
    int32_t n = w->P.n;
    size_t bytes = sizeof(double) * 3 * (size_t)n;
    csm_constraints *kc = w->constraints;
    if (kc) {
        kc->work = 0;
        kc->failed = 0;
        if (csm_grow((void **)&kc->x_start, &kc->cap_x_start, 3 * (int64_t)n, sizeof(double)) ||
            csm_grow((void **)&kc->v_start, &kc->cap_v_start, 3 * (int64_t)n, sizeof(double)))
            return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for the colliders and contacts");
        memcpy(kc->x_start, w->P.x, bytes);
        memcpy(kc->v_start, w->P.v, bytes);
        w->x_step = kc->x_start;
        w->v_step = kc->v_start;
        if (kc->contact) csm_contacts_start(&kc->contacts, kc->x_start);
    }
    memset(w->P.force, 0, bytes);
    int working = 0; /* a force without a potential acted: its work is counted */
    w->potential_force = NULL;
    w->potential_h = h;
    for (int k = 0; k < sim->nforces; k++) {
        csm_stage *st = &sim->forces[k];
        int counted = !st->potential && st->apply;
        /* a force with a potential, kept apart where the step is explicit (its lag) */
        int conservative = st->potential && st->apply && w->spring_capped;
        if ((counted || conservative) &&
            csm_grow((void **)&sim->force_before, &sim->work_cap[1], 3 * (int64_t)n, sizeof(double)))
            return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
        if (counted && !working) {
            if (csm_grow((void **)&sim->work_force, &sim->work_cap[0], 3 * (int64_t)n, sizeof(double)))
                return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
            memset(sim->work_force, 0, bytes);
            working = 1;
        }
        if (conservative && !w->potential_force) {
            if (csm_grow((void **)&sim->potential_force, &sim->work_cap[3], 3 * (int64_t)n, sizeof(double)))
                return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
            memset(sim->potential_force, 0, bytes);
            w->potential_force = sim->potential_force;
        }
        if (counted || conservative) memcpy(sim->force_before, w->P.force, bytes);
        if (apply_stage(st, w, h, err)) return -1;
        double *sum = counted ? sim->work_force : conservative ? sim->potential_force : NULL;
        for (int64_t a = 0; sum && a < 3 * (int64_t)n; a++) sum[a] += w->P.force[a] - sim->force_before[a];
    }
    if (external_force_on(sim)) { /* the host's forces (csm_sim.external_force): no potential, their work counted */
        if (!working) {
            if (csm_grow((void **)&sim->work_force, &sim->work_cap[0], 3 * (int64_t)n, sizeof(double)) ||
                csm_grow((void **)&sim->force_before, &sim->work_cap[1], 3 * (int64_t)n, sizeof(double)))
                return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
            memset(sim->work_force, 0, bytes);
            working = 1;
        }
        for (int64_t a = 0; a < 3 * (int64_t)n; a++) {
            w->P.force[a] += sim->external_force[a];
            sim->work_force[a] += sim->external_force[a];
        }
    }
    if (sim->integrator->step(w, sim->integrator_state, h, err)) return -1;
    if (kc) {
        if (project_after(sim, h) || kc->failed ||
            (kc->contact && csm_contacts_bounce(&kc->contacts, w, h)))
            return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for the colliders and contacts");
        /* contact's work, kc->work (a moving collider's pushes), is in its share of the budget */
        if ((kc->contact && kc->contacts.npairs > 0) || kc->work != 0) sim->contact_acted = 1;
        if (kc->work != 0) sim->collider_worked = 1;
        if (sim->report.collider_pushed) sim->contact_acted = 1; /* a collider at rest pushed: its share too */
        sim->report.collider_pushed = 0;
    }
    if (working) {
        double power = 0;
        for (int64_t a = 0; a < 3 * (int64_t)n; a++) power += sim->work_force[a] * w->P.v[a];
        sim->work_external += h * power;
    }
    if (sim->ncolliders) {
        if (csm_grow((void **)&sim->collider_before, &sim->work_cap[2], 6 * (int64_t)n, sizeof(double)))
            return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
        memcpy(sim->collider_before, w->P.x, bytes);
        memcpy(sim->collider_before + 3 * (size_t)n, w->P.v, bytes);
    }
    for (int k = 0; k < sim->ncolliders; k++)
        if (apply_stage(&sim->colliders[k], w, h, err)) return -1;
    if (sim->ncolliders && colliders_acted(sim, sim->collider_before)) sim->contact_acted = 1;
    w->x_step = w->v_step = NULL;
    double t1 = csm_now();
    if (plastic_flow(sim, h, err)) return -1;
    double t2 = csm_now();
    if (apply_stage(&sim->recluster, w, h, err)) return -1;
    double t3 = csm_now();
    w->time += h;
    w->step++;
    seconds[CSM_TIMING_DYNAMICS] += t1 - t0;
    seconds[CSM_TIMING_PLASTICITY] += t2 - t1;
    seconds[CSM_TIMING_RECLUSTERING] += t3 - t2; /* the reclusterer charges CSM_TIMING_EMBEDDING itself */
    return 0;
}

int csm_world_event(csm_world *w, csm_recluster_event e)
{
    csm_report *r = w->report;
    if (csm_grow((void **)&r->events, &r->cap_events, (int64_t)r->nevents + 1, sizeof *r->events)) return -1;
    e.frame = r->frame;
    e.time = w->time;
    r->events[r->nevents++] = e;
    return 0;
}

/* A non-finite position or velocity, a speed past time.max_speed, or a non-finite cluster
   (its rotation or plastic deformation) stops the run, naming what, which and when. */
static int check_state(const csm_sim *sim, csm_error *err)
{
    const csm_particles *P = &sim->w.P;
    const csm_clusters *C = &sim->w.C;
    double vmax = sim->cfg->max_speed, v2max = vmax * vmax;
    int32_t frame = sim->frame + 1;
    for (int32_t i = 0; i < P->n; i++) {
        const double *x = &P->x[3 * i], *v = &P->v[3 * i];
        if (!isfinite(x[0] + x[1] + x[2]) || !isfinite(v[0] + v[1] + v[2]))
            return csm_fail(err, CSM_EXIT_FAILURE,
                            "non-finite %s of particle %d at frame %d (t = %g s): the step is unstable",
                            isfinite(x[0] + x[1] + x[2]) ? "velocity" : "position", i, frame, sim->w.time);
        double s2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2], r2 = x[0] * x[0] + x[1] * x[1] + x[2] * x[2];
        /* finite but past what the diagnostics can square: its kinetic energy, its moment about the
           origin would log as infinite */
        if (!isfinite(P->mass[i] * s2) || !isfinite(P->mass[i] * r2))
            return csm_fail(err, CSM_EXIT_FAILURE,
                            "the %s of particle %d (%.3g) overflows its energy at frame %d (t = %g s): the step is "
                            "unstable", isfinite(P->mass[i] * s2) ? "position" : "speed", i,
                            isfinite(P->mass[i] * s2) ? fmax(fabs(x[0]), fmax(fabs(x[1]), fabs(x[2])))
                                                      : fmax(fabs(v[0]), fmax(fabs(v[1]), fabs(v[2]))),
                            frame, sim->w.time);
        if (vmax > 0 && s2 > v2max)
            return csm_fail(err, CSM_EXIT_FAILURE,
                            "particle %d moves at %.4g m/s, beyond time.max_speed = %g, at frame %d (t = %g s): the "
                            "step is unstable", i, sqrt(s2), vmax, frame, sim->w.time);
    }
    /* the budget's sums: a force's power over a body far gone overflows before its speed does */
    double budget = sim->work_external;
    for (int k = 0; k < CSM_DISSIPATED_N; k++) budget += sim->report.dissipated[k];
    if (!isfinite(budget))
        return csm_fail(err, CSM_EXIT_FAILURE,
                        "the work done on the bodies or the energy they dissipated overflows at frame %d (t = %g s): "
                        "the step is unstable", frame, sim->w.time);
    for (int32_t c = 0; c < C->k; c++) {
        double sum = 0;
        for (int a = 0; a < 9; a++) sum += C->R[9 * c + a] + C->Fp[9 * c + a];
        if (!isfinite(sum))
            return csm_fail(err, CSM_EXIT_FAILURE, "non-finite rotation or F^p of cluster %d (id %d) at frame %d (t = %g s)",
                            c, C->id[c], frame, sim->w.time);
    }
    return 0;
}

void csm_sim_frame_begin(csm_sim *sim)
{
    csm_report *r = &sim->report;
    memset(&r->timings, 0, sizeof r->timings);
    r->frame = sim->frame + 1;
    sim->frame_start = csm_now();
}

int csm_sim_frame_end(csm_sim *sim, csm_error *err)
{
    csm_report *r = &sim->report;
    csm_world *w = &sim->w;
    r->yielded = 0;
    for (int32_t c = 0; c < w->C.k; c++) r->yielded += w->C.flowed[c] > 0;
    if (check_state(sim, err)) return -1;
    sim->frame++;
    r->timings.seconds[CSM_TIMING_TOTAL] = csm_now() - sim->frame_start;
    sim->last = r->timings;
    return 0;
}

int csm_sim_frame(csm_sim *sim, csm_error *err)
{
    const csm_config *cfg = sim->cfg;
    double h = cfg->dt / cfg->substeps;
    csm_sim_frame_begin(sim);
    for (int32_t s = 0; s < cfg->substeps; s++)
        if (csm_sim_step(sim, h, err)) return -1;
    return csm_sim_frame_end(sim, err);
}

/* The most of a quantity so far, with the frame and time it came at. */
static void note_most(const csm_sim *sim, double value, csm_most *most)
{
    if (!(value > most->value)) return;
    most->value = value;
    most->frame = sim->frame;
    most->time = sim->w.time;
}

void csm_sim_track_contact(csm_sim *sim, const csm_diag *d)
{
    double held = d->kinetic + d->elastic + d->elastic_lag;
    if (!sim->check_begun) {
        sim->check_begun = 1;
        sim->check_contact0 = d->dissipated_contact;
        sim->check_error0 = d->energy_error;
        sim->check_work0 = sim->work_external;
        sim->check_held = held;
        return;
    }
    sim->check_held = fmax(sim->check_held, held);
    note_most(sim, sim->check_contact0 - d->dissipated_contact, &sim->created);
    note_most(sim, d->energy_error - sim->check_error0, &sim->made);
    /* a particle deeper inside another object's proxy than the contact distance at a frame's end
       went into that body: resting contact keeps it within the proxy grown by d */
    const csm_contacts *c = sim->constraints && sim->constraints->contact ? &sim->constraints->contacts : NULL;
    if (c && c->cfg.method == CSM_CONTACT_PROXIES && d->contact_particle >= 0 && d->contact_depth > c->distance &&
        d->contact_depth > sim->inside.value) {
        const double *v = &sim->w.P.v[3 * d->contact_particle];
        note_most(sim, d->contact_depth, &sim->inside);
        sim->inside_particle = d->contact_particle;
        sim->inside_object = csm_cluster_object(&sim->w, d->contact_cluster);
        sim->inside_speed = csm_v3_norm(v);
    }
}

int csm_sim_contact_warning(const csm_sim *sim, char *text, size_t size)
{
    double given = sim->check_held + fabs(sim->work_external - sim->check_work0);
    const csm_most *m = NULL;
    const char *what = NULL, *where = "", *why = NULL;
    if (!sim->collider_worked && sim->created.value > CSM_CONTACT_CREATED * given) {
        m = &sim->created;
        what = "contact created";
        where = " with every collider at rest";
        why = ": a step too long for the contacts it meets (time.substeps), or a body started inside a collider";
    } else if (sim->made.value > CSM_ENERGY_CREATED * given && given > 1e-9) {
        m = &sim->made;
        what = "the run created";
        why = " (energy_error): a step too long for its stiffness or its contacts, or a start inside a collider";
    }
    int n = 0;
    if (m)
        n = snprintf(text, size, "%s %.3g J by frame %d (t = %g s)%s, %.3g %% of the %.3g J the bodies held and were given%s",
                     what, m->value, m->frame, m->time, where, 100 * m->value / given, given, why);
    const csm_contacts *c = sim->constraints && sim->constraints->contact ? &sim->constraints->contacts : NULL;
    if (sim->inside.value > 0 && n >= 0 && (size_t)n < size) {
        int32_t i = sim->inside_particle;
        n += snprintf(text + n, size - (size_t)n,
                      "%sparticle %d of object %d lay %.3g m inside a proxy of object %d at frame %d (t = %g s), "
                      "moving at %.3g m/s: deeper than the contact distance %.3g m, the contacts did not hold it "
                      "out (time.substeps, solver.iterations, contact.passes)",
                      n ? "; " : "", (int)i, (int)sim->w.P.object[i], sim->inside.value, (int)sim->inside_object,
                      (int)sim->inside.frame, sim->inside.time, sim->inside_speed, c ? c->distance : 0.0);
        m = &sim->inside;
    }
    if (c && c->outran > 0 && n >= 0 && (size_t)n < size) {
        double h = sim->cfg->dt / sim->cfg->substeps;
        int proxies = c->cfg.method == CSM_CONTACT_PROXIES, bound = proxies ? CSM_PROXY_TRAVEL : CSM_CONTACT_SWEEP / 2;
        snprintf(text + n, size - (size_t)n,
                 "%sparticle %d of object %d travelled %.3g m in one step at t = %g s (%.3g m/s) %s object %d, beyond "
                 "the %.3g m (%d contact distances) %s (time.substeps)",
                 n ? "; " : "", (int)c->outran_particle, (int)sim->w.P.object[c->outran_particle], c->outran,
                 c->outran_time, c->outran / h, proxies ? "relative to a cluster of" : "near", (int)c->outran_object,
                 c->distance * bound, bound,
                 proxies ? "within which cluster_proxies hold two bodies apart: they may pass through each other"
                         : "the contacts sweep whole: contacts along its path may be missed");
        return 1;
    }
    return m != NULL;
}

void csm_sim_logged(csm_sim *sim)
{
    csm_world *w = &sim->w;
    sim->report.plastic_skipped = 0;
    sim->report.yielded = 0;
    sim->report.iteration_residual = 0;
    sim->report.nevents = 0;
    sim->report.dissipated[CSM_DISSIPATED_CONTACT] = sim->diag_contact;
    sim->error_logged = sim->diag_error;
    sim->contact_acted = 0;
    memset(w->C.flowed, 0, sizeof *w->C.flowed * (size_t)w->C.k);
}

/* The share of the explicit step's lag that the forces with a potential hold: (h/2) sum_i f_i . v_i,
   their forces evaluated at the state (P.force is kept as the step left it). Symplectic Euler
   under a constant force f loses h^2 |f|^2 / 2m a step from kinetic + potential (a cube falling
   freely at 240 steps a second lost 0.2 J/s, 0.8 % of drop_cube's energy before it landed), and
   conserves the sum with this term; 0 for the implicit integrators, whose loss is
   dissipated_numerical's. NaN when a force cannot be evaluated (out of memory). */
static double potential_lag(csm_sim *sim, double h)
{
    csm_world *w = &sim->w;
    int32_t n = w->P.n;
    size_t bytes = sizeof(double) * 3 * (size_t)n;
    int any = 0;
    for (int k = 0; k < sim->nforces; k++) any |= sim->forces[k].potential && sim->forces[k].apply;
    if (!w->spring_capped || !any || n == 0) return 0.0;
    if (csm_grow((void **)&sim->force_before, &sim->work_cap[1], 3 * (int64_t)n, sizeof(double))) return NAN;
    memcpy(sim->force_before, w->P.force, bytes);
    memset(w->P.force, 0, bytes);
    csm_error err;
    int rc = 0;
    for (int k = 0; k < sim->nforces && !rc; k++)
        if (sim->forces[k].potential) rc = apply_stage(&sim->forces[k], w, h, &err);
    double power = 0;
    for (int64_t a = 0; a < 3 * (int64_t)n; a++) power += w->P.force[a] * w->P.v[a];
    memcpy(w->P.force, sim->force_before, bytes);
    return rc ? NAN : 0.5 * h * power;
}

/* The goal distances and strains of the last fit, and the energy the integrator's springs and
   the volume terms store with the explicit step's lag, into d. */
static void elastic_parts(csm_sim *sim, csm_diag *d)
{
    csm_world *w = &sim->w;
    const csm_particles *P = &w->P;
    const csm_clusters *C = &w->C;
    d->goal_distance = d->max_strain = 0;
    /* per cluster: sum w m |x - g|^2, then sum w m (g - x) . v */
    double *dist = csm_grow((void **)&sim->distance, &sim->distance_cap, 2 * (int64_t)C->k, sizeof(double)) ? NULL
                                                                                                     : sim->distance;
    double *dot = dist ? dist + C->k : NULL;
    if (dist) memset(dist, 0, sizeof *dist * 2 * (size_t)C->k);
    for (int32_t j = 0; j < C->m; j++) {
        double g[3];
        csm_membership_goal(C, j, g);
        const double *x = &P->x[3 * C->member[j]];
        double e[3] = {x[0] - g[0], x[1] - g[1], x[2] - g[2]};
        double e2 = csm_v3_dot(e, e);
        d->goal_distance += C->wmass[j] * e2;
        if (dist) {
            dist[C->mcluster[j]] += C->wmass[j] * e2;
            dot[C->mcluster[j]] -= C->wmass[j] * csm_v3_dot(e, &P->v[3 * C->member[j]]);
        }
        double width = C->width[C->mcluster[j]];
        if (width > 0) {
            double beta = sqrt(e2) / width; /* Bargteil-Jones Eq 4 */
            if (beta > d->max_strain) d->max_strain = beta;
        }
    }
    if (dist && csm_elastic_on(w)) {
        /* the continuum energy (elastic.c), as the distances an integrator weighs by 1/2 k_c: each
           cluster's 2 E_c / k_c, and its springs' sum w m (g - x) . v */
#pragma omp parallel for schedule(dynamic, 16)
        for (int32_t c = 0; c < C->k; c++) {
            double k = csm_modulus_stiffness(w, w->spring_modulus, c);
            double e = csm_elastic_cluster(w, c, P->x, P->v, &C->com[3 * c], &C->R[9 * c], &C->Fp[9 * c],
                                           w->spring_modulus, k, NULL, NULL, NULL, &dot[c]);
            dist[c] = k > 0 ? 2.0 * e / k : 0.0;
            if (!(k > 0)) dot[c] = 0.0;
        }
    }
    const csm_integrator *in = sim->integrator;
    double h = sim->cfg->dt / sim->cfg->substeps;
    int springs = in->version >= 2 && in->elastic_energy && dist;
    d->volume_energy = csm_volume_energy(w, h);
    d->elastic = springs ? in->elastic_energy(w, sim->integrator_state, h, dist) + d->volume_energy : NAN;
    /* (h/2) sum_i f_i . v_i = h sum_c 1/2 k_c sum w m (g - x) . v: the integrator's energy is linear in
       its per-cluster sums */
    d->elastic_lag = !w->spring_capped ? 0.0 : springs ? h * in->elastic_energy(w, sim->integrator_state, h, dot) : NAN;
    d->elastic_lag += potential_lag(sim, h);
}

void csm_diagnostics(csm_sim *sim, csm_diag *d)
{
    double start = csm_now();
    csm_world *w = &sim->w;
    const csm_particles *P = &w->P;
    csm_clusters *C = &w->C;
    memset(d, 0, sizeof *d);
    d->contact_particle = d->contact_cluster = -1;
    csm_fit_all(w, P->x);
    double M = 0;
    for (int32_t i = 0; i < P->n; i++) {
        const double *x = &P->x[3 * i], *v = &P->v[3 * i];
        double m = P->mass[i], L[3];
        d->kinetic += 0.5 * m * csm_v3_dot(v, v);
        csm_v3_cross(x, v, L);
        for (int k = 0; k < 3; k++) {
            d->momentum[k] += m * v[k];
            d->angular_momentum[k] += m * L[k];
            d->center_of_mass[k] += m * x[k];
        }
        M += m;
    }
    for (int k = 0; k < 3; k++) d->center_of_mass[k] /= M > 0 ? M : 1;
    for (int k = 0; k < sim->nforces; k++)
        if (sim->forces[k].potential) d->potential += sim->forces[k].potential(w, sim->forces[k].state);
    double det_sum = 0;
    d->max_cond_Fp = C->k ? 1.0 : 0.0;
    for (int32_t c = 0; c < C->k; c++) {
        det_sum += csm_m3_det(&C->Fp[9 * c]);
        double U[9], s[3], V[9];
        w->svd(&C->Fp[9 * c], U, s, V);
        double cond = fabs(s[2]) > 0 ? s[0] / fabs(s[2]) : INFINITY;
        if (cond > d->max_cond_Fp) d->max_cond_Fp = cond;
    }
    d->volume_ratio = C->k ? det_sum / C->k : 1.0;
    /* turned inside out: an energy of F's rotation (polar, the corotated and neo-Hookean solids)
       can hold a cluster so, a state no material has; a step too long or too few iterations at an
       impact leave it (csm info says so) */
    for (int32_t c = 0; c < C->k; c++) d->inverted += C->rank[c] == 3 && csm_m3_det(&C->F[9 * c]) < 0;
    if (sim->constraints && sim->constraints->contact) {
        const csm_contacts *ct = &sim->constraints->contacts;
        int32_t q;
        d->contact_pairs = ct->npairs;
        d->contact_depth = csm_contacts_depth(ct, w, P->x, &q);
        d->contact_particle = q >= 0 ? ct->pair[2 * q] : -1;
        d->contact_cluster = q >= 0 ? ct->pair[2 * q + 1] : -1;
    }
    elastic_parts(sim, d);
    double energy = d->kinetic + d->potential + d->elastic + d->elastic_lag;
    if (!sim->have_energy0) {
        sim->energy0 = energy;
        sim->have_energy0 = 1;
    }
    double dissipated = 0;
    for (int k = 0; k < CSM_DISSIPATED_N; k++) dissipated += sim->report.dissipated[k];
    /* Contact's share. A collider's projections inside the iterations and the contacts between
       particles change the energy in ways no force's work describes (a push out of the ground
       sets a particle moving; a pair's projection and its friction take motion away), and the
       integrator's own step runs through them. So the budget's change over the frames in which
       contact moved a particle is contact's, dissipated_contact (< 0: contact created energy),
       and energy_error is the rest: the integrator's, on the frames without contact. */
    double error = energy - sim->energy0 - sim->work_external + dissipated;
    d->dissipated_contact = sim->report.dissipated[CSM_DISSIPATED_CONTACT];
    if (sim->contact_acted) {
        d->dissipated_contact -= error - sim->error_logged;
        error = sim->error_logged;
    }
    d->energy_error = error;
    sim->diag_error = d->energy_error;
    sim->diag_contact = d->dissipated_contact;
    sim->last.seconds[CSM_TIMING_TOTAL] += csm_now() - start;
}

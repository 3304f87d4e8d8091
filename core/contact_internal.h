/* What contact's files share: contact_grid.c's broad phase, which contact.c (particle contact and
   the dispatch) and contact_proxies.c (Jones 2015's proxies) both use, and the proxies' entry
   points. Internal to core/. */
#ifndef CSM_CONTACT_INTERNAL_H
#define CSM_CONTACT_INTERNAL_H

#include "contact.h"
#include "csm_math.h"
#include "world.h"

#include <math.h>

/* Counting sort of points into the hashed cells of size 1 / inv, in about 2 buckets a point of n
   (stride doubles apart): all n, or with ids only the nid points listed there, in increasing
   order. c->sorted lists the point ids bucket by bucket, increasing within one, and bucket b
   holds sorted[cell_start[b], cell_start[b + 1]); a point left out changes neither the buckets
   nor the order of the others. Returns -1 when out of memory. */
int csm_contacts_grid_sort(csm_contacts *c, const double *pts, int stride, int32_t n, const int32_t *ids, int32_t nid,
                           double inv);
/* The buckets of the 27 cells around point q, each once (two cells may share a bucket); returns
   how many. */
int csm_contacts_grid_around(const csm_contacts *c, const double q[3], double inv, uint32_t seen[27]);
/* Room for one more pair; -1 when out of memory. */
int csm_contacts_pair_push(csm_contacts *c, int32_t a, int32_t b);
/* Room for each listed pair's direction and pushes, the pushes zero. */
int csm_contacts_pairs_ready(csm_contacts *c);
/* Coulomb friction on a contact over the step (after Macklin et al. 2014 Sec 6.1), kept as the
   impulse it applied so far, F[0..2] (times h, on the contact's first side), and the length of its
   corrections, F[3]. Each correction takes back all of the slip left (-slip / wsum), holds F
   inside the cone |F| <= bound (Catto's clamping of the accumulated impulse), and stops where the
   corrections' length reaches bound, which keeps the iterations from working friction back and
   forth without end (let them, up to twice the bound, and the five cubes of stack.yaml never came
   to rest: 1e-4 J at 30 s). out gets the correction, as an impulse. One square root where the
   cone does not cut: it runs for every touching pair on every pass. */
static inline void csm_friction_cone(double F[4], const double slip[3], double wsum, double bound, double out[3])
{
    double G[3], iw = 1.0 / wsum, room = bound - F[3];
    if (!(room > 0)) { /* spent: most calls on a resting stack */
        out[0] = out[1] = out[2] = 0;
        return;
    }
    for (int e = 0; e < 3; e++) G[e] = F[e] - slip[e] * iw;
    double g2 = csm_v3_dot(G, G);
    if (g2 > bound * bound) {
        double s = bound / sqrt(g2);
        for (int e = 0; e < 3; e++) G[e] *= s;
    }
    double d[3] = {G[0] - F[0], G[1] - F[1], G[2] - F[2]}, step = csm_v3_norm(d);
    if (step > room) {
        double s = room / step; /* room > 0 here */
        for (int e = 0; e < 3; e++) d[e] *= s;
        step *= s;
    }
    for (int e = 0; e < 3; e++) {
        out[e] = d[e];
        F[e] += d[e];
    }
    F[3] += step;
}

/* contact.method: proxies (contact_proxies.c): csm_contacts_find, _project and _depth. */
int csm_proxies_find(csm_contacts *c, const csm_world *w, const double *x);
void csm_proxies_project(csm_contacts *c, const csm_world *w, double *x);
double csm_proxies_depth(const csm_contacts *c, const csm_world *w, const double *x, int32_t *pair);
/* How far pair q's particle lay outside its cluster's proxy at the step's start, in the proxy's
   rest space (0: inside): the gap the two closed in the step, for restitution (contact_bounce.c). */
double csm_proxies_gap(const csm_contacts *c, int32_t q);

/* contact.normal surface (contact_surface.c): after the pairs are found, the patches that hold
   particles off other objects' surfaces, and the pairs they cover (positions x0: the step's
   start); one projection of them; their deepest overlap. */
int csm_surface_find(csm_contacts *c, const csm_world *w, const double *x0);
void csm_surface_project(csm_contacts *c, const csm_world *w, double *x, double mu);
double csm_surface_depth(const csm_contacts *c, const double *x);

#endif

/* Contact between particles: of two objects, and of one object with itself (the config's
   `contact:` section). Each particle is a sphere of radius r; two spheres closer than the contact
   distance d = 2 r are pushed apart along the line between them, a position constraint
   |x_i - x_j| >= d projected inside the integrators' iterations (csm_world_project). Friction
   acts on the same positions: a pair's tangential slip over the step is taken back, at most mu
   times the pair's push apart so far (static friction while that suffices, kinetic beyond), so
   the velocities the step derives from its positions meet Coulomb's law. With contact.normal
   surface (the default) a particle that lies over a flat patch of another object's surface is
   held off that patch as a plane instead (contact_surface.c); with contact.response body two
   objects that touched are also held against each other's slip as rigid bodies, by Coulomb's law
   on their contact region's total (contact_hold.c), and with contact.restitution they bounce off
   each other as rigid bodies after the step (contact_bounce.c).

   The broad phase is a hashed uniform grid rebuilt at the first projection of each step, on the
   predicted positions: a counting sort of the particles by cell, then for each particle the 27
   cells around it. It finds every pair within the search distance 2 d (so a pair that closes
   during the iterations is already listed) in O(n), sweeps the paths of fast particles near other
   objects (contact.c sweep), and it allocates nothing once its buffers have grown to the scene. Everything is serial and in a fixed order, so the pairs and the
   positions are the same bit for bit whatever the thread count.

   method cluster_proxies (Jones et al. 2015) keeps particles out of the clusters of other
   objects instead: each cluster has a proxy, a sphere cut by half-spaces in its rest space, and
   the broad phase (the same grid, over the clusters' world spheres) lists (particle, cluster)
   pairs; contact.c says how a push is shared. */
#ifndef CSM_CONTACT_H
#define CSM_CONTACT_H

#include <stdint.h>

#include "error.h"

struct csm_world;

enum { CSM_CONTACT_NONE, CSM_CONTACT_PARTICLES, CSM_CONTACT_PROXIES };
/* The most positions along a step the broad phase of particles samples (contact.c particles_find):
   relative travel up to half this many contact distances a step is swept whole. */
enum { CSM_CONTACT_SWEEP = 1024 };
/* cluster_proxies hold two bodies apart while a particle's travel relative to a cluster's centre
   over a step near it stays within this many contact distances (as measured: two cubes of 0.2 and
   0.4 m met head-on went through each other from 80 and 100 contact distances a step); beyond,
   the run warns (csm_proxies_find). */
enum { CSM_PROXY_TRAVEL = 64 };
/* Up to this many objects the broad phase asks each particle which other objects' boxes it reaches. */
enum { CSM_CONTACT_BOX_OBJECTS = 64 };
/* contact.reaction of cluster_proxies: who moves when a particle is pushed out of a proxy */
enum { CSM_REACTION_RIGID, CSM_REACTION_JONES2015 };
/* contact.normal of particles: what a particle of one object is pushed along by another's */
enum { CSM_NORMAL_SURFACE, CSM_NORMAL_CENTRES };
/* contact.response: what static friction between objects acts on */
enum { CSM_CONTACT_RESPONSE_BODY, CSM_CONTACT_RESPONSE_PARTICLES };

/* Two objects' contact region over a step, summed over the pushes between them (contact_bounce.c). */
typedef struct csm_contact_region {
    int32_t a, b;                     /* the objects, a < b */
    double weight, n[3], xc[3], gap;  /* sums of the pushes, and of each times its normal from b to a, its point
                                         and how far apart its particles were at the step's start */
} csm_contact_region;

/* Two objects whose particles are paired in a step, for the hold (contact_hold.c): their contact
   region at the last projection, the pushes between them summed, and what the step's holds used. */
typedef struct csm_contact_hold {
    int32_t a, b;                     /* the objects, a < b */
    double weight, n[3], xc[3];       /* sums of the pushes, and of each times its normal from b to a and its point */
    double F[3], Flen;                /* the pushes' friction impulses on a (times h): their sum, and their lengths' */
    double slack;                     /* the friction the pushes left unused: mu weight less what they took */
    double twist;                     /* the sum of each push's mu push - |its friction|, times its distance from the
                                         region's centre across n */
    double held[3], turned;           /* the step's holds so far: the sums of their impulses J and couples tau on a, */
    double held_len, turned_len;      /* and of their lengths */
} csm_contact_hold;

/* An object as a rigid body at the last projection, for the hold (contact_hold.c). */
typedef struct csm_hold_body {
    double M, com0[3], Iinv[9];       /* the step's: its mass, centre of mass at the step's start and inverse
                                         inertia there (a pseudo-inverse when flat) */
    double com[3], D[3], W[3];        /* at the last projection: its centre, and its rigid displacement since
                                         the step began, at the centre and its turn */
    double at[3], moveD[3], moveW[3]; /* the projection's holds so far: the centre they started from, and the
                                         sums of what they moved it by */
    int pinned, needed, moved;
} csm_hold_body;

/* The `contact:` section. */
typedef struct csm_contact_cfg {
    int method;      /* CSM_CONTACT_* */
    double radius;   /* m, each particle's; 0: half the sampling spacing of its object (the largest) */
    double friction; /* Coulomb coefficient between particles */
    int self;        /* also between particles of one object (csm_contacts_excluded) */
    int32_t passes;  /* Gauss-Seidel passes over the pairs per projection */
    double cut;      /* cluster_proxies: a bounding plane is kept when closer to the centre than cut times the radius */
    int reaction;    /* cluster_proxies: CSM_REACTION_* */
    int normal;      /* particles: CSM_NORMAL_* */
    double restitution;      /* Newton's e between two objects as rigid bodies (0: none added) */
    double bounce_threshold; /* m/s: approaches slower than this get no restitution */
    int response;            /* CSM_CONTACT_RESPONSE_*: body adds static friction between objects as rigid bodies */
} csm_contact_cfg;

typedef struct csm_contacts {
    csm_contact_cfg cfg;
    double distance;            /* d = 2 r */
    int32_t npairs;
    int32_t *pair;              /* [2 npairs] i < j, in increasing i, then in the order the cells list them */
    double *normal;             /* [3 npairs] each pair's direction x_i - x_j at the step's start, normalised */
    double *lambda;             /* [npairs] the step's accumulated push apart (m / inverse mass) */
    double *push;               /* [4 npairs] cluster_proxies: each pair's push out of its proxy in the current pass, and its length */
    const double *x0;           /* [3n] the positions at the step's start (not owned); NULL: none given */
    int32_t *cell_start;        /* [buckets + 1] counting sort of the particles by hashed cell */
    int32_t *sorted;            /* [n] particle ids by bucket, increasing within one */
    uint32_t *bucket;           /* [n] each particle's bucket */
    double *friction;           /* [4 npairs] each pair's friction over the step: its impulse times h on the first particle, and its corrections' length */
    int64_t cap_pair, cap_normal, cap_lambda, cap_push, cap_start, cap_sorted, cap_bucket, cap_friction;
    int32_t buckets;            /* a power of two, at least 2 n */
    /* cluster_proxies: the pairs are (particle, cluster), sorted by cluster */
    double *proxy;              /* per cluster: its proxy in its rest space (contact.c) */
    double *body;               /* per cluster: its rigid body at the step's start */
    double *sphere;             /* [16k] per cluster: the sphere its proxy sweeps over the step (centre, reach), its frame at x (contact_proxies.c) */
    int32_t *stamp;             /* [n] scratch of the broad phase */
    int64_t cap_proxy, cap_body, cap_sphere, cap_stamp;
    /* particles with contact.normal surface: a particle over another object's surface is held off
       that surface, a plane near it, not off each of its particles (contact.c patches) */
    double *sample;             /* the points along the step the broad phase sweeps (contact.c sweep) */
    int32_t *owner;             /* each point's particle */
    double *boxes;              /* [6 objects] each object's box over the step, grown by 2 d */
    int32_t *swept;             /* [n] the points each particle's path adds */
    int32_t *near;              /* the particles the grid holds: those that can meet another object (contact.c sweep) */
    int32_t nnear;
    int64_t cap_owner, cap_boxes, cap_swept, cap_near;
    csm_contact_region *regions; /* contact_bounce.c's, one per two objects that touched */
    int32_t nregions;
    int64_t cap_regions;
    csm_contact_hold *holds;    /* contact_hold.c's, one per two objects paired in the step */
    int32_t nholds;
    int32_t *hold_of;           /* [npairs + npatch] each pair's, then patch's, hold h as 2 h, or 2 h + 1 where it
                                   pushes from the hold's a to b (-1: within one object, or off) */
    int32_t *hold_push;         /* [npairs + npatch] scratch: the hold of each pair and patch that pushed */
    double *hold_geom;          /* [4 (npairs + npatch)] scratch: each of those pushes' point and friction left */
    csm_hold_body *hold_body;   /* [objects] */
    int hold_ready;             /* 1 once the step's holds are listed */
    int64_t cap_holds, cap_hold_of, cap_hold_push, cap_hold_geom, cap_hold_body;
    int64_t cap_sample;
    double *wnormal;            /* [3n] the particles' surface normals (csm_world.surface) turned to the world */
    int32_t *adj_start, *adj;   /* [n + 1], [2 npairs]: the pairs each particle has with other objects, CSR */
    int32_t *under_a;           /* scratch: the surface particles a patch is fitted to, as their pairs in adj */
    double *under;              /* scratch: each one's offset from the particle and its normal (6 doubles) */
    int64_t cap_under_a, cap_under;
    unsigned char *covered;     /* [npairs] 1: a patch holds the pair, its own constraint is off */
    int64_t ncovered;           /* how many times a patch took a pair (0: none is covered) */
    int32_t npatch, npatch_k;
    int32_t *patch_i;           /* [npatch] the particle held off */
    int32_t *patch_start;       /* [npatch + 1] its surface's particles, patch_k[patch_start[p] ...] */
    int32_t *patch_k;           /* [npatch_k] */
    double *patch_w;            /* [npatch_k] their weights: sum 1, their centre the point under the particle */
    double *patch_n;            /* [3 npatch] the surface's normal there */
    double *patch_lambda;       /* [npatch] as lambda */
    double *patch_friction;     /* [4 npatch] as friction, on the particle held off */
    double *patch_gap;          /* [npatch] how far i's centre is held over the plane of the weights' centre */
    int64_t cap_patch_gap, cap_wnormal, cap_adj_start, cap_adj, cap_covered, cap_patch, cap_patch_start, cap_patch_k, cap_patch_w,
        cap_patch_n, cap_patch_lambda, cap_patch_friction;
    /* the fastest path the particles' sweep could not sample whole (more than CSM_CONTACT_SWEEP / 2
       contact distances a step, near another object), or with cluster_proxies the longest travel
       relative to a cluster's centre beyond CSM_PROXY_TRAVEL contact distances: its length (m; 0:
       none yet), its particle, that object and the time of its step */
    double outran, outran_time;
    int32_t outran_particle, outran_object;
    /* cluster_proxies: what each pair needs to be left out of a pass (csm_proxies_project): the
       particle where it was first looked at in the step and how far it could move from there,
       with its cluster's frame, before it could reach the proxy; each cluster's frame then */
    double *reach;              /* [8 npairs] x at the first look, and the margin (0: always look); the
                                   particle's start in its cluster's rest space (x0 by the map at x0),
                                   and 1 where that is inside the proxy */
    double *frame0;             /* [12 k] per cluster: its frame's centre and map at the first look */
    int64_t cap_reach, cap_frame0;
    int proxy_looked;           /* 1 once the step's first pass has looked at every pair */
    int proxy_cull;             /* 1 (the default): leave out the pairs the margins prove outside */
    int64_t proxy_looks, proxy_left_out; /* pairs looked at and left out over the run */
    uint64_t proxy_epoch;       /* the clusters' epoch the proxies were built for */
    int32_t proxy_k;            /* the clusters the proxies were built for (0: none yet) */
} csm_contacts;

/* Set up from the config; the world gives the default radius. */
int csm_contacts_init(csm_contacts *c, const csm_contact_cfg *cfg, const struct csm_world *w, csm_error *err);
void csm_contacts_free(csm_contacts *c);

/* The pair (i, j) is no contact: a pinned pair, two particles of one object without `self`, or,
   with `self`, two that lie closer than 2 d in the rest shape or share a cluster (they hold
   each other through the shape matching already). */
int csm_contacts_excluded(const csm_contacts *c, const struct csm_world *w, int32_t i, int32_t j);

/* The step begins at positions x0 (the pairs' directions, the slip friction takes back), which
   stay as they are until the step ends. */
void csm_contacts_start(csm_contacts *c, const double *x0);

/* The broad phase on positions x: every pair within 2 d that csm_contacts_excluded lets in.
   Returns -1 when out of memory. */
int csm_contacts_find(csm_contacts *c, const struct csm_world *w, const double *x);

/* One projection of x onto the pairs' constraints (cfg.passes Gauss-Seidel passes, in pair
   order). Each push apart moves the two particles against each other in proportion to their
   inverse masses along the pair's direction at the step's start, so it keeps linear and angular
   momentum; friction's pushes, across that direction, keep linear momentum only. Then, with
   response body, csm_contacts_hold. Returns -1 when out of memory. */
int csm_contacts_project(csm_contacts *c, const struct csm_world *w, double *x);

/* After the step (velocities from positions): restitution between the objects that touched, as rigid
   bodies (contact_bounce.c). Returns -1 when out of memory. */
int csm_contacts_bounce(csm_contacts *c, struct csm_world *w, double h);

/* At the end of each projection, with response body: static friction between the objects that
   touched, as rigid bodies, with the pairs' own friction within Coulomb's bound (contact_hold.c).
   Returns -1 when out of memory. */
int csm_contacts_hold(csm_contacts *c, const struct csm_world *w, double *x);

/* The deepest overlap over the listed pairs at positions x (0: none): d - |x_i - x_j| for
   particles, the distance a particle lies inside a cluster's proxy for cluster_proxies. */
double csm_contacts_depth(const csm_contacts *c, const struct csm_world *w, const double *x, int32_t *pair);

#endif

/* Initial clustering: methods (clustering/) fill a builder (cluster -> members CSR with weights), which becomes
   a csm_clusters through csm_clusters_from_builder. */
#ifndef CSM_CLUSTERING_H
#define CSM_CLUSTERING_H

#include "plugin.h"
#include "world.h"

typedef struct csm_cluster_builder {
    int32_t k, m, cap_k, cap_m;
    int32_t *offset; /* [k+1] */
    int32_t *member; /* [m] */
    double *weight;  /* [m] */
} csm_cluster_builder;

void csm_builder_init(csm_cluster_builder *b);
void csm_builder_free(csm_cluster_builder *b);
/* Start a new cluster; members are added with csm_builder_add until the next begin. */
void csm_builder_begin(csm_cluster_builder *b);
void csm_builder_add(csm_cluster_builder *b, int32_t particle, double weight);
/* Close the last cluster: sort its members by particle id. */
void csm_builder_end(csm_cluster_builder *b);
/* w_ic = 1 / n_i for the memberships of particles [first, first + count). */
void csm_builder_equal_weights(csm_cluster_builder *b, int32_t first, int32_t count);
/* Make one body of an object's clusters [k0, b->k), over its particles [first, first + count)
   at rest positions `rest` (3 per particle, of all particles): where the clusters fall into
   pieces that share no particle (the cluster-particle graph is not connected, and a piece would
   fly off on its own), the cluster of each smaller piece's particle nearest to the rest of the
   object gains the CSM_JOIN particles nearest to it from outside the piece, until one piece
   is left. Each added membership weighs the mean of its particle's other weights, and that
   particle's weights are scaled to keep their sum (1 / n_i stays 1 / n_i). Returns the pieces
   joined (0: it was one body), and writes the smallest joined piece's clusters and particles. */
enum { CSM_JOIN = 4 };
int csm_builder_connect(csm_cluster_builder *b, int32_t k0, const double *rest, int32_t first, int32_t count,
                        int32_t *piece_clusters, int32_t *piece_particles);

/* Turn a builder into clusters over particles p; returns the number of degenerate clusters
   (A_rr of rank < 3) or -1 when out of memory. */
int csm_clusters_from_builder(csm_clusters *c, const csm_cluster_builder *b, const csm_particles *p);

/* Fuzzy c-means (Jones et al. 2015; Falkenstein 2017 Sec 2.3.1 and, with clusters held,
   Sec 3.2.2's cluster optimization). Each centre is free (moves to the mass- and u^m-weighted mean
   of the points), held (keeps its place, still takes its share of memberships) or ignored (no
   membership: a cluster being removed); state NULL frees them all. */
enum { CSM_FCM_FREE, CSM_FCM_HELD, CSM_FCM_IGNORED };

/* One update: memberships u[count][k] of points x (weights mass) to the centres, u_ic =
   1 / sum_j (d_ic / d_ij)^(2/(m-1)), then the free centres move. Returns the largest membership
   change. */
double csm_fcm_update(const double *x, const double *mass, int32_t count, double *centres, int32_t k,
                      const unsigned char *state, double m, double *u);
/* Updates until no membership changes by more than tolerance (at most max_iterations), then
   memberships for the final centres; returns the number of updates. */
int csm_fcm_iterate(const double *x, const double *mass, int32_t count, double *centres, int32_t k,
                    const unsigned char *state, double m, double tolerance, int max_iterations, double *u);

/* A clustering at a glance (`csm info`, the log's root attributes): min, mean, max of members
   per cluster, clusters per particle, and width w_c = max_i |p_ic| (Bargteil-Jones Eq 5). */
typedef struct csm_cluster_stats {
    int32_t count;
    double members[3], per_particle[3], width[3];
} csm_cluster_stats;

void csm_cluster_stats_compute(const csm_clusters *c, int32_t n, csm_cluster_stats *s);


#endif

#include "builtins.h"

#include "methods.h"
#include "plasticity.h"
#include "recluster.h"
#include "solvers.h"

void csm_register_builtins(void)
{
    static int done;
    if (done) return;
    done = 1;
    csm_clustering_register();
    csm_solvers_register();
    csm_plasticity_register();
    csm_recluster_register();
}

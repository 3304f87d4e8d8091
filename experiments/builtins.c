#include "commands.h"

#include "core.h"
#include "plasticity.h"
#include "recluster.h"
#include "solvers.h"

void csm_register_builtins(void)
{
    static int done;
    if (done) return;
    done = 1;
    csm_core_register();
    csm_solvers_register();
    csm_plasticity_register();
    csm_recluster_register();
}

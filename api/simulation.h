/* What the command line reads of a simulation besides csm.h: its state and config (for the notes
   and timings it prints), where its log is, and a close with the status it chose. Internal to csm:
   not part of the stable API. */
#ifndef CSM_SIMULATION_H
#define CSM_SIMULATION_H

#include "csm.h"
#include "sim.h"

const csm_sim *csm_simulation_state(const csm_simulation *s);
const csm_config *csm_simulation_config(const csm_simulation *s);
/* csm_simulation_destroy with the log's status `status` (NULL: "ok", or the failure that stopped
   it); a log that cannot be closed cleanly returns 1 and says why in error. */
int csm_simulation_close(csm_simulation *s, const char *status, char *error, size_t size);

#endif

/* The `csm` subcommands (docs/DESIGN.md "The command line"). Each returns the process exit status. */
#ifndef CSM_COMMANDS_H
#define CSM_COMMANDS_H

#include "builtins.h"

#include "error.h"


int csm_cmd_run(int argc, char **argv);
int csm_cmd_check(int argc, char **argv);
int csm_cmd_list(int argc, char **argv);
int csm_cmd_info(int argc, char **argv);
int csm_cmd_sweep(int argc, char **argv);
int csm_cmd_bench(int argc, char **argv);

#endif

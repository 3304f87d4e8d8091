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

/* While a command reads a log it did not write (csm info, a resume's set-up), a crash inside HDF5
   on corrupted bytes (its global-heap read of a string attribute copies past its buffer) ends the
   process with one line naming the log, exit 2, not a core dump: csm_cli_guard(path) until
   csm_cli_guard(NULL). The path must outlive the guard. */
void csm_cli_guard(const char *path);

#endif

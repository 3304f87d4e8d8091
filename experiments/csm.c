/* csm: run clustered shape matching experiments. */
#include "commands.h"
#include "log.h"
#include "csm_version.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "csm %s - clustered shape matching experiments\n"
            "\n"
            "usage:\n"
            "  csm run CONFIG [-o OUT.h5] [--set key=value]... [--frames N] [--threads N] [--force]\n"
            "  csm sweep CONFIG [-o DIR] [--set key=value]... [--frames N] [--jobs N] [--threads N]\n"
            "            [--shard K/N] [--list]          every run of the config's sweep: one log each + index.csv\n"
            "  csm check CONFIG [--set key=value]...   validate, print the resolved config\n"
            "  csm list                                every plugin with its parameters\n"
            "  csm info OUT.h5                         what a log holds\n"
            "  csm bench [SCENE...] [--threads N[,N...]] [--frames N] [--csv] [--scaling] [--list]\n"
            "                                          per-stage timings of built-in scenes\n",
            CSM_VERSION);
}

int main(int argc, char **argv)
{
    csm_log_init();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("csm %s (%s)\n", CSM_VERSION, CSM_GIT_COMMIT);
        return 0;
    }
    csm_register_builtins();
    if (!strcmp(cmd, "run")) return csm_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "check")) return csm_cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "list")) return csm_cmd_list(argc - 1, argv + 1);
    if (!strcmp(cmd, "info")) return csm_cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "sweep")) return csm_cmd_sweep(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return csm_cmd_bench(argc - 1, argv + 1);
    fprintf(stderr, "csm: unknown command '%s' (run, sweep, check, list, info, bench)\n", cmd);
    return 2;
}

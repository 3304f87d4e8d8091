/* csm: run clustered shape matching experiments. */
#include "commands.h"
#include "log.h"
#include "csm_version.h"

#include <stdio.h>
#include <string.h>

/* One entry per command: its name and its usage lines. */
static const struct {
    const char *name, *lines;
} commands[] = {
    {"run", "  csm run CONFIG [-o OUT.h5] [--set key=value]... [--frames N] [--threads N] [--force]\n"
            "                                          one experiment, logged to HDF5\n"
            "  csm run --resume LOG.h5 [--frames N] [--threads N]\n"
            "                                          continue an interrupted, killed or failed-to-write log\n"},
    {"sweep", "  csm sweep CONFIG [-o DIR] [--set key=value]... [--frames N] [--jobs N] [--threads N]\n"
              "            [--shard K/N] [--list] [--max-runs N]\n"
              "                                          every run of the config's sweep: one log each + index.csv\n"},
    {"check", "  csm check CONFIG [--set key=value]...   validate, print the resolved config\n"},
    {"list", "  csm list                                every plugin with its parameters\n"},
    {"info", "  csm info OUT.h5                         what a log holds\n"},
    {"bench", "  csm bench [SCENE...] [--threads N[,N...]] [--frames N] [--csv] [--scaling] [--list]\n"
              "                                          per-stage timings of built-in scenes\n"},
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

/* The usage of one command, or of all when `only` is NULL. */
static void usage(FILE *f, const char *only)
{
    fprintf(f, "csm %s - clustered shape matching experiments\n\nusage:\n", CSM_VERSION);
    for (int k = 0; k < NCOMMANDS; k++)
        if (!only || !strcmp(only, commands[k].name)) fputs(commands[k].lines, f);
}

int main(int argc, char **argv)
{
    csm_log_init();
    if (argc < 2) {
        usage(stderr, NULL);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout, argc > 2 ? argv[2] : NULL);
        return 0;
    }
    /* csm COMMAND --help: that command's usage, and success */
    for (int k = 2; k < argc; k++)
        if (!strcmp(argv[k], "-h") || !strcmp(argv[k], "--help"))
            for (int c = 0; c < NCOMMANDS; c++)
                if (!strcmp(cmd, commands[c].name)) {
                    usage(stdout, cmd);
                    return 0;
                }
    if (!strcmp(cmd, "--version")) {
        printf("csm %s (%s)\n", CSM_VERSION, csm_git_commit);
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

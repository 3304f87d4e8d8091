/* The tree a config is parsed into, and what the files of core/io/ that build a csm_config share:
   node helpers (yaml.c), typed values and validated sections (params.c), --set overrides and the
   sweep mapping (overrides.c). Internal to core/io/. */
#ifndef CSM_IO_CONFIG_TREE_H
#define CSM_IO_CONFIG_TREE_H

#include "config.h"

#include <stddef.h>
#include <stdio.h>

/* yaml.c: nodes */
char *csm_dupstr(const char *s, size_t len);
csm_node *csm_node_new(csm_node_kind kind, const char *src, int line);
void csm_node_free(csm_node *n);
void csm_node_append(csm_node *parent, csm_node *child);
csm_node *csm_node_get(const csm_node *map, const char *key);
csm_node *csm_node_scalar(const char *text, const char *src, int line);
/* "file:line" (or "--set #N") of a node, for messages; returns buf. */
const char *csm_node_where(const csm_node *n, char *buf, size_t size);
/* Print a note once per process (a sweep loads its config once per run). */
void csm_note_once(const char *msg);
/* 0 when text of n bytes is UTF-8 without control characters (but tab and line breaks), as a
   config must be; else the 1-based line of the first byte that is not, and what it is in why. */
int csm_text_check(const unsigned char *s, size_t n, char *why, size_t size);
/* Parse YAML text (the file at `file` when set, else `str`) into a tree whose nodes name `src`. */
int csm_yaml_parse(const char *file, const char *str, const char *src, csm_node **out, csm_error *err);
/* The tree as block YAML (malloc'd): the resolved config. */
char *csm_yaml_emit(const csm_node *root);
/* One node in flow style ("[1, 2]", "{a: 1}", "x"; an empty scalar as ""), malloc'd: a sweep
   value ready for an override. */
char *csm_yaml_emit_flow(const csm_node *n);

#define FAIL_AT(err, node, ...)                                                                   \
    do {                                                                                          \
        char wbuf_[512], mbuf_[768];                                                              \
        snprintf(mbuf_, sizeof mbuf_, __VA_ARGS__);                                               \
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s", csm_node_where(node, wbuf_, sizeof wbuf_), \
                        mbuf_);                                                                   \
    } while (0)

/* params.c: values and sections */
int csm_param_parse(const csm_node *n, const char *path, const csm_param_spec *s, csm_value *v, csm_error *err);
void csm_param_set_default(const csm_param_spec *s, csm_value *v);
/* A default as a tree node, so the resolved config shows every value in force. */
csm_node *csm_param_default_node(const csm_param_spec *s, const char *src);
/* A section whose selector key (`type`, `method`, ...) picks a plugin of a registry kind; its
   values are validated and its parameter struct filled. */
int csm_section_plugin(csm_node *map, const char *path, csm_kind kind, const char *selector, const char *def,
                       const char *const *extra, csm_plugin_cfg *out, csm_error *err);
/* A section of a fixed table of kinds (shapes, sampling): like a plugin section. */
int csm_section_kind(csm_node *map, const char *path, const csm_plugin_head *kinds, int nkinds, const char *def,
                     int *which, csm_plugin_cfg *out, csm_error *err);
/* The child `key` of root, created (empty) when absent. */
csm_node *csm_section_node(csm_node *root, const char *key, csm_node_kind kind);
/* Validate a section against `spec` (keys in `also` are the caller's), then fill `out` (NULL:
   nothing) from the table's bound rows. */
int csm_section_fixed(csm_node *map, const char *path, const csm_param_spec *spec, const char *const *also,
                      csm_value *values, void *out, csm_error *err);

/* overrides.c */
/* Apply the index-th `--set key.path=value` to the tree. */
int csm_override_apply(csm_node *root, const char *text, int index, csm_error *err);
/* Take `sweep` out of root (so the run's own config never holds it) into cfg->sweep. */
int csm_sweep_parse(csm_node *root, csm_config *cfg, csm_error *err);
void csm_sweep_free(csm_config *cfg);

/* sections.c: the tables of the sections that are not plugins */
extern const csm_param_spec csm_top_params[], csm_time_params[], csm_output_params[], csm_contact_params[];
extern const csm_param_spec csm_body_table[], csm_pin_table[], csm_pin_index_spec;
/* objects[].pinned.below|above */
typedef struct csm_pin_params {
    int axis;
    double value;
} csm_pin_params;

#endif

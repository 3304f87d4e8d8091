/* `--set key.path=value` overrides applied to the tree, and the `sweep:` mapping taken out of
   it. */
#include "config_tree.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Overrides.                                                                                 */

int csm_override_apply(csm_node *root, const char *text, int index, csm_error *err)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "--set %s: expected key.path=value", text);
    char keypath[512];
    snprintf(keypath, sizeof keypath, "%.*s", (int)(eq - text), text);
    csm_node *value = NULL;
    char why[128];
    if (csm_text_check((const unsigned char *)text, strlen(text), why, sizeof why))
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "--set #%d: %s", index, why);
    if (csm_yaml_parse(NULL, eq + 1, "--set", &value, err)) {
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "--set %s: the value is not valid YAML", text);
    }
    if (!value) value = csm_node_scalar("", "--set", index);
    /* mark every node of the value as coming from this override */
    csm_node *stackn[256];
    int sp = 0;
    stackn[sp++] = value;
    while (sp) {
        csm_node *n = stackn[--sp];
        n->src = "--set";
        n->line = index;
        for (int k = 0; k < n->nchild && sp < 256; k++) stackn[sp++] = n->child[k];
    }
    csm_node *cur = root;
    char *save = NULL, *part = strtok_r(keypath, ".", &save);
    while (part) {
        char *next = strtok_r(NULL, ".", &save);
        if (cur->kind == CSM_NODE_SEQ) {
            char *end;
            long idx = strtol(part, &end, 10);
            if (*end || idx < 0 || idx >= cur->nchild) {
                csm_node_free(value);
                return csm_fail(err, CSM_EXIT_BAD_INPUT,
                                "--set %s: '%s' is not an index of a list of %d", text, part, cur->nchild);
            }
            if (!next) {
                value->key = NULL;
                csm_node_free(cur->child[idx]);
                cur->child[idx] = value;
                return 0;
            }
            cur = cur->child[idx];
        } else if (cur->kind == CSM_NODE_MAP) {
            csm_node *child = csm_node_get(cur, part);
            if (!next) {
                value->key = csm_dupstr(part, strlen(part));
                if (child) {
                    for (int k = 0; k < cur->nchild; k++)
                        if (cur->child[k] == child) cur->child[k] = value;
                    csm_node_free(child);
                } else {
                    csm_node_append(cur, value);
                }
                return 0;
            }
            if (!child) {
                child = csm_node_new(CSM_NODE_MAP, "--set", index);
                child->key = csm_dupstr(part, strlen(part));
                csm_node_append(cur, child);
            }
            cur = child;
        } else {
            csm_node_free(value);
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "--set %s: '%s' is inside a value, not a mapping",
                            text, part);
        }
        part = next;
    }
    csm_node_free(value);
    return csm_fail(err, CSM_EXIT_BAD_INPUT, "--set %s: empty key path", text);
}

/* ------------------------------------------------------------------------------------------ */
/* sweep: key paths to lists of values (docs/DESIGN.md "Configs"); the run set is their product.   */

void csm_sweep_free(csm_config *cfg)
{
    for (int a = 0; a < cfg->nsweep; a++) {
        for (int k = 0; k < cfg->sweep[a].nvalues; k++) free(cfg->sweep[a].values[k]);
        free(cfg->sweep[a].values);
        free(cfg->sweep[a].key);
    }
    free(cfg->sweep);
    cfg->sweep = NULL;
    cfg->nsweep = 0;
}

/* Takes `sweep` out of root (so the run's own config never holds it) into cfg->sweep. */
int csm_sweep_parse(csm_node *root, csm_config *cfg, csm_error *err)
{
    csm_node *sw = csm_node_get(root, "sweep");
    if (!sw) return 0;
    for (int k = 0; k < root->nchild; k++)
        if (root->child[k] == sw) {
            memmove(root->child + k, root->child + k + 1, (size_t)(root->nchild - k - 1) * sizeof *root->child);
            root->nchild--;
            break;
        }
    int rc = 0;
    char wbuf[512];
    if (sw->kind == CSM_NODE_SCALAR && (!strcmp(sw->text, "") || !strcmp(sw->text, "null") || !strcmp(sw->text, "~")))
        goto done; /* "sweep:" with nothing after it */
    if (sw->kind != CSM_NODE_MAP) {
        rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: sweep must be a mapping of key paths to lists "
                      "(sweep: {solver.alpha: [0.1, 0.5]})", csm_node_where(sw, wbuf, sizeof wbuf));
        goto done;
    }
    cfg->sweep = calloc((size_t)sw->nchild + 1, sizeof *cfg->sweep);
    if (!cfg->sweep) CSM_OUT_OF_MEMORY();
    for (int a = 0; a < sw->nchild; a++) {
        csm_node *c = sw->child[a];
        if (c->kind != CSM_NODE_SEQ) {
            rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: sweep.%s must be a list of values ([a, b, ...])",
                          csm_node_where(c, wbuf, sizeof wbuf), c->key);
            goto done;
        }
        if (c->nchild == 0) {
            rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: sweep.%s is an empty list (a sweep needs at least one value)",
                          csm_node_where(c, wbuf, sizeof wbuf), c->key);
            goto done;
        }
        if (!c->key[0] || c->key[0] == '.' || c->key[strlen(c->key) - 1] == '.' || strstr(c->key, "..")) {
            rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: sweep key '%s' is not a key path (like solver.alpha)",
                          csm_node_where(c, wbuf, sizeof wbuf), c->key);
            goto done;
        }
        /* one key inside another's would have its value swept twice, one overwriting the other
           while index.csv records both */
        for (int a = 0; a < cfg->nsweep; a++) {
            const char *o = cfg->sweep[a].key;
            size_t lo = strlen(o), lc = strlen(c->key), l = lo < lc ? lo : lc;
            if (!strncmp(o, c->key, l) && (lo == lc || (lo < lc ? c->key : o)[l] == '.')) {
                rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: sweep keys %s and %s overlap (one sets part of the "
                              "other): sweep each value under one key", csm_node_where(c, wbuf, sizeof wbuf), o, c->key);
                goto done;
            }
        }
        csm_sweep_axis *ax = &cfg->sweep[cfg->nsweep++];
        ax->key = csm_dupstr(c->key, strlen(c->key));
        ax->line = c->line;
        ax->values = calloc((size_t)c->nchild, sizeof *ax->values);
        if (!ax->values) CSM_OUT_OF_MEMORY();
        for (int k = 0; k < c->nchild; k++) {
            ax->values[ax->nvalues++] = csm_yaml_emit_flow(c->child[k]);
        }
    }
done:
    csm_node_free(sw);
    return rc;
}


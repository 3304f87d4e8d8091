/* The config tree: nodes with the file and line they came from, YAML (or JSON) parsed into it
   with libfyaml, and the tree written back as YAML, the resolved config every log stores. */
#include "config_tree.h"
#include "error.h"

#include <ctype.h>
#include <libfyaml.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* The tree.                                                                                  */

char *csm_dupstr(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (!d) CSM_OUT_OF_MEMORY();
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

csm_node *csm_node_new(csm_node_kind kind, const char *src, int line)
{
    csm_node *n = calloc(1, sizeof *n);
    if (!n) CSM_OUT_OF_MEMORY();
    n->kind = kind;
    n->src = src;
    n->line = line;
    return n;
}

void csm_node_free(csm_node *n)
{
    if (!n) return;
    for (int k = 0; k < n->nchild; k++) csm_node_free(n->child[k]);
    free(n->child);
    free(n->key);
    free(n->text);
    free(n);
}

void csm_node_append(csm_node *parent, csm_node *child)
{
    if (parent->nchild == parent->cap) {
        parent->cap = parent->cap ? 2 * parent->cap : 8;
        parent->child = realloc(parent->child, (size_t)parent->cap * sizeof *parent->child);
        if (!parent->child) CSM_OUT_OF_MEMORY();
    }
    parent->child[parent->nchild++] = child;
}

csm_node *csm_node_get(const csm_node *map, const char *key)
{
    if (!map || map->kind != CSM_NODE_MAP) return NULL;
    for (int k = 0; k < map->nchild; k++)
        if (strcmp(map->child[k]->key, key) == 0) return map->child[k];
    return NULL;
}

csm_node *csm_node_scalar(const char *text, const char *src, int line)
{
    csm_node *n = csm_node_new(CSM_NODE_SCALAR, src, line);
    n->text = csm_dupstr(text, strlen(text));
    return n;
}

/* "file:line" or "--set key=value" for messages. */
/* Print a note once per process: a sweep loads its config once per run, and the same unused key
   is one note, not one per run. Remembers the last notes by a hash of their text. */
void csm_note_once(const char *msg)
{
    static uint64_t seen[64];
    static int nseen;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *c = msg; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    for (int k = 0; k < nseen && k < 64; k++)
        if (seen[k] == h) return;
    seen[nseen++ % 64] = h;
    fputs(msg, stderr);
}

const char *csm_node_where(const csm_node *n, char *buf, size_t size)
{
    return csm_cfg_where(n ? n->src : NULL, n ? n->line : 0, buf, (int)size);
}


/* ------------------------------------------------------------------------------------------ */
/* YAML events -> tree.                                                                       */

typedef struct diag_capture {
    char msg[512];
} diag_capture;

static void diag_output(struct fy_diag *diag, void *user, const char *buf, size_t len)
{
    (void)diag;
    diag_capture *dc = user;
    if (dc->msg[0]) return; /* keep the first message */
    /* a string's input has no name but its address, "<memory-@0x...-0x...>:": the caller names it */
    if (len > 9 && !strncmp(buf, "<memory-@", 9)) {
        const char *end = memchr(buf, '>', len);
        if (end && (size_t)(end - buf) + 2 <= len && end[1] == ':') {
            len -= (size_t)(end + 2 - buf);
            buf = end + 2;
        }
    }
    size_t n = len < sizeof dc->msg - 1 ? len : sizeof dc->msg - 1;
    memcpy(dc->msg, buf, n);
    dc->msg[n] = '\0';
    for (char *c = dc->msg; *c; c++)
        if (*c == '\n') *c = ' ';
}

static int mark_line(struct fy_token *t)
{
    const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
    return m ? m->line + 1 : 0;
}

/* Parse YAML text (file when `file` is set, else the string) into a tree. */
int csm_yaml_parse(const char *file, const char *str, const char *src, csm_node **out,
                      csm_error *err)
{
    diag_capture dc = {{0}};
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.output_fn = diag_output;
    dcfg.user = &dc;
    dcfg.colorize = false;
    dcfg.show_source = false;
    dcfg.show_position = true;
    dcfg.show_type = false;
    dcfg.show_module = false;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    struct fy_parse_cfg pcfg = {.search_path = NULL, .flags = FYPCF_QUIET | FYPCF_JSON_AUTO, .userdata = NULL, .diag = diag};
    struct fy_parser *fyp = fy_parser_create(&pcfg);
    if (!fyp) {
        if (diag) fy_diag_unref(diag);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot create a YAML parser", src);
    }
    int rc = file ? fy_parser_set_input_file(fyp, file) : fy_parser_set_string(fyp, str, strlen(str));
    if (rc != 0) {
        fy_parser_destroy(fyp);
        if (diag) fy_diag_unref(diag);
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot read", src);
    }

    csm_node *stack[128];
    int depth = 0, docs = 0, status = 0;
    csm_node *root = NULL;
    char *pending_key = NULL; /* a mapping's key waiting for its value */
    int pending_key_line = 0;
    char wbuf[512];
    struct fy_event *ev;
    while ((ev = fy_parser_parse(fyp)) != NULL) {
        enum fy_event_type type = ev->type;
        csm_node *made = NULL;
        int line = mark_line(fy_event_get_token(ev));
        if (type == FYET_DOCUMENT_START) {
            if (++docs > 1) {
                status = csm_fail(err, CSM_EXIT_BAD_INPUT,
                                  "%s:%d: more than one YAML document in a config", src, line);
            }
        } else if (type == FYET_ALIAS) {
            status = csm_fail(err, CSM_EXIT_BAD_INPUT,
                              "%s:%d: YAML aliases are not supported in configs", src, line);
        } else if (type == FYET_SCALAR || type == FYET_MAPPING_START || type == FYET_SEQUENCE_START) {
            csm_node *parent = depth ? stack[depth - 1] : NULL;
            /* One rule for tags: a value's type comes from its key's parameter table, so a tag
               (!!str, !!int, a local !tag) could only disagree with it; every tag is refused. */
            struct fy_token *tag = type == FYET_SCALAR           ? ev->scalar.tag
                                   : type == FYET_MAPPING_START ? ev->mapping_start.tag
                                                                 : ev->sequence_start.tag;
            if (tag && status == 0) {
                size_t tlen = 0;
                const char *tt = fy_token_get_text(tag, &tlen);
                static const char core_prefix[] = "tag:yaml.org,2002:"; /* shown as written: !!str */
                size_t cp = sizeof core_prefix - 1;
                if (tt && tlen > cp && !strncmp(tt, core_prefix, cp))
                    snprintf(wbuf, sizeof wbuf, "!!%.*s", (int)(tlen - cp < 64 ? tlen - cp : 64), tt + cp);
                else
                    snprintf(wbuf, sizeof wbuf, "%.*s", (int)(tlen < 64 ? tlen : 64), tt ? tt : "");
                status = csm_fail(err, CSM_EXIT_BAD_INPUT,
                                  "%s:%d: YAML tag '%s': configs take no tags (a value's type comes from its key; csm "
                                  "list shows each key's type)", src, mark_line(tag), wbuf);
            }
            if (type == FYET_SCALAR) {
                size_t len = 0;
                const char *t = fy_token_get_text(ev->scalar.value, &len);
                if (parent && parent->kind == CSM_NODE_MAP && !pending_key) {
                    /* a key */
                    for (int k = 0; k < parent->nchild; k++)
                        if (strlen(parent->child[k]->key) == len &&
                            memcmp(parent->child[k]->key, t, len) == 0) {
                            snprintf(wbuf, sizeof wbuf, "%.*s", (int)len, t);
                            status = csm_fail(err, CSM_EXIT_BAD_INPUT,
                                              "%s:%d: duplicate key '%s' (first given on line %d)",
                                              src, line, wbuf, parent->child[k]->line);
                            break;
                        }
                    pending_key = csm_dupstr(t ? t : "", len);
                    pending_key_line = line;
                } else {
                    made = csm_node_new(CSM_NODE_SCALAR, src, line);
                    made->text = csm_dupstr(t ? t : "", len);
                    enum fy_scalar_style st = fy_token_scalar_style(ev->scalar.value);
                    made->quoted = st == FYSS_SINGLE_QUOTED || st == FYSS_DOUBLE_QUOTED;
                }
            } else {
                made = csm_node_new(type == FYET_MAPPING_START ? CSM_NODE_MAP : CSM_NODE_SEQ, src, line);
                if (parent && parent->kind == CSM_NODE_MAP && !pending_key) {
                    status = csm_fail(err, CSM_EXIT_BAD_INPUT,
                                      "%s:%d: a mapping key must be a plain scalar", src, line);
                    csm_node_free(made);
                    made = NULL;
                }
            }
            if (made) {
                if (parent && parent->kind == CSM_NODE_MAP) {
                    made->key = pending_key;
                    if (pending_key_line) made->line = made->line ? made->line : pending_key_line;
                    pending_key = NULL;
                }
                if (parent)
                    csm_node_append(parent, made);
                else
                    root = made;
                if (made->kind != CSM_NODE_SCALAR) {
                    if (depth == (int)(sizeof stack / sizeof stack[0])) {
                        status = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: nested too deeply", src, line);
                    } else {
                        stack[depth++] = made;
                    }
                }
            }
        } else if (type == FYET_MAPPING_END || type == FYET_SEQUENCE_END) {
            if (depth > 0) depth--;
        }
        fy_parser_event_free(fyp, ev);
        if (status) break;
    }
    int stream_error = fy_parser_get_stream_error(fyp);
    fy_parser_destroy(fyp);
    if (diag) fy_diag_unref(diag);
    free(pending_key);
    if (status) {
        csm_node_free(root);
        return status;
    }
    if (stream_error) {
        csm_node_free(root);
        /* libfyaml's message starts with "line:column: ", after the file name when it read a
           file; prefix the source name once. */
        const char *m = dc.msg;
        size_t n = strlen(src);
        if (!strncmp(m, src, n) && m[n] == ':') m += n + 1;
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%s", src, m[0] ? m : " malformed YAML");
    }
    *out = root;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Emit the resolved tree as YAML.                                                            */

typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        if (!b->s) CSM_OUT_OF_MEMORY();
    }
}

static int scalar_is_plain_safe(const csm_node *n)
{
    const char *t = n->text;
    if (!t[0]) return 0;
    if (n->quoted) {
        /* quoted strings that would read back as another type stay quoted */
        if (!strcmp(t, "true") || !strcmp(t, "false") || !strcmp(t, "null") || !strcmp(t, "~"))
            return 0;
        char *end;
        strtod(t, &end);
        if (*end == '\0') return 0;
    }
    for (const char *c = t; *c; c++)
        if (!(isalnum((unsigned char)*c) || strchr("_./+-", *c))) return 0;
    return t[0] != '-' || isdigit((unsigned char)t[1]) || t[1] == '.';
}

static void emit_scalar(strbuf *b, const csm_node *n)
{
    if (scalar_is_plain_safe(n)) {
        sb_printf(b, "%s", n->text);
        return;
    }
    sb_printf(b, "\"");
    for (const char *c = n->text; *c; c++) {
        if (*c == '"' || *c == '\\') sb_printf(b, "\\%c", *c);
        else if (*c == '\n') sb_printf(b, "\\n");
        else if ((unsigned char)*c < 0x20) sb_printf(b, "\\x%02x", (unsigned char)*c);
        else sb_printf(b, "%c", *c);
    }
    sb_printf(b, "\"");
}

/* Emitted inline: scalars, empty mappings, and sequences whose items are scalars or sequences of
   scalars (vectors, matrices, point lists). */
static int is_flat(const csm_node *n)
{
    if (n->kind == CSM_NODE_SCALAR) return 1;
    if (n->kind == CSM_NODE_MAP) return n->nchild == 0;
    for (int k = 0; k < n->nchild; k++) {
        const csm_node *c = n->child[k];
        if (c->kind == CSM_NODE_MAP) return 0;
        for (int j = 0; c->kind == CSM_NODE_SEQ && j < c->nchild; j++)
            if (c->child[j]->kind != CSM_NODE_SCALAR) return 0;
    }
    return 1;
}

static void emit_flow(strbuf *b, const csm_node *n)
{
    if (n->kind == CSM_NODE_SCALAR) {
        emit_scalar(b, n);
    } else if (n->kind == CSM_NODE_MAP) {
        sb_printf(b, "{");
        for (int k = 0; k < n->nchild; k++) {
            sb_printf(b, "%s%s: ", k ? ", " : "", n->child[k]->key);
            emit_flow(b, n->child[k]);
        }
        sb_printf(b, "}");
    } else {
        sb_printf(b, "[");
        for (int k = 0; k < n->nchild; k++) {
            if (k) sb_printf(b, ", ");
            emit_flow(b, n->child[k]);
        }
        sb_printf(b, "]");
    }
}

/* Block style; `inline_first` continues the current line ("- " of a list item) with the first
   key of a mapping. */
static void emit_block(strbuf *b, const csm_node *n, int indent, int inline_first)
{
    for (int k = 0; k < n->nchild; k++) {
        const csm_node *c = n->child[k];
        int pad = k == 0 && inline_first ? 0 : indent;
        if (n->kind == CSM_NODE_MAP) {
            sb_printf(b, "%*s%s:", pad, "", c->key);
        } else {
            sb_printf(b, "%*s-", pad, "");
        }
        if (is_flat(c)) {
            sb_printf(b, " ");
            emit_flow(b, c);
            sb_printf(b, "\n");
        } else if (n->kind == CSM_NODE_SEQ && c->kind == CSM_NODE_MAP) {
            sb_printf(b, " ");
            emit_block(b, c, indent + 2, 1);
        } else {
            sb_printf(b, "\n");
            emit_block(b, c, indent + 2, 0);
        }
    }
}


char *csm_yaml_emit(const csm_node *root)
{
    strbuf b = {0};
    emit_block(&b, root, 0, 0);
    return b.s ? b.s : csm_dupstr("", 0);
}

char *csm_yaml_emit_flow(const csm_node *n)
{
    strbuf b = {0};
    emit_flow(&b, n);
    return b.s ? b.s : csm_dupstr("\"\"", 2);
}

/* YAML's printable set (YAML 1.2 Sec 5.1-5.2): a NUL byte, another control character or a
   malformed UTF-8 sequence is refused before parsing (libfyaml accepts NUL bytes silently in some
   inputs, and hangs on an invalid byte in a directive line, of a config or of a --set value). */
int csm_text_check(const unsigned char *s, size_t n, char *why, size_t size)
{
    int line = 1;
    for (size_t k = 0; k < n; k++) {
        unsigned c = s[k];
        if (c == '\n') line++;
        if (c == 0) {
            snprintf(why, size, "binary data (a NUL byte) in a config");
            return line;
        }
        /* a carriage return alone (an old Mac line break) is refused: libfyaml 0.8 crashes
           reporting some errors after one (found by fuzz_set, tests/fuzz/set/lone_cr) */
        if (c == '\r' && (k + 1 == n || s[k + 1] != '\n')) {
            snprintf(why, size, "a carriage return without a line feed: a config's line breaks are LF or CRLF");
            return line;
        }
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
            snprintf(why, size, "a control character (byte 0x%02x) in a config", c);
            return line;
        }
        if (c < 0x80) continue;
        /* the length of the sequence and the range of its second byte */
        int more = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
        unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80, hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
        int ok = more > 0 && k + (size_t)more < n;
        for (int j = 1; ok && j <= more; j++) {
            unsigned d = s[k + (size_t)j];
            ok = j == 1 ? d >= lo && d <= hi : d >= 0x80 && d <= 0xbf;
        }
        if (!ok) {
            snprintf(why, size, "not UTF-8 text (byte 0x%02x); a config is text", c);
            return line;
        }
        k += (size_t)more;
    }
    return 0;
}

#define _DEFAULT_SOURCE /* mkstemps */
/* Configs: every kind of bad input gives a one-line message naming file, line and key, with
   exit code 2; good input resolves with defaults; --set overrides. */
#include "check.h"

#include "commands.h"
#include "config.h"
#include "sim.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GOOD_BASE                                                                                 \
    "name: t\n"                                                                                   \
    "objects:\n"                                                                                  \
    "  - shape: {type: box, size: [1, 1, 1]}\n"                                                   \
    "    sampling: {type: grid, spacing: 0.25}\n"                                                 \
    "solver:\n"                                                                                   \
    "  integrator: shape_matching\n"
static const char *GOOD = GOOD_BASE "  alpha: 0.4\n";

static char path[64];

static const char *write_temp(const char *text, size_t len)
{
    snprintf(path, sizeof path, "/tmp/csm_test_XXXXXX.yaml");
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    assert_true(write(fd, text, len) == (ssize_t)len);
    close(fd);
    return path;
}

/* Load `text`; expect failure with every NULL-terminated substring in the message. */
static void expect_error_sets(const char *text, size_t len, const char *const *sets, int nsets, ...)
{
    csm_register_builtins();
    const char *p = write_temp(text, len);
    csm_config cfg;
    csm_error err = {{0}, 0};
    int rc = csm_config_load(p, sets, nsets, &cfg, &err);
    unlink(p);
    if (rc == 0) {
        csm_config_free(&cfg);
        fail_msg("config was accepted:\n%s", text);
    }
    assert_int_equal(err.code, 2);
    assert_null(strchr(err.msg, '\n')); /* one line */
    va_list ap;
    va_start(ap, nsets);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) {
        char want[256];
        /* "@" stands for the temporary file's path */
        if (s[0] == '@') snprintf(want, sizeof want, "%s%s", p, s + 1);
        else snprintf(want, sizeof want, "%s", s);
        if (!strstr(err.msg, want)) fail_msg("message '%s' lacks '%s'", err.msg, want);
    }
    va_end(ap);
}

#define EXPECT(text, ...) expect_error_sets(text, strlen(text), NULL, 0, __VA_ARGS__, NULL)

static void test_good_config_resolves_defaults(void **state)
{
    (void)state;
    csm_register_builtins();
    const char *p = write_temp(GOOD, strlen(GOOD));
    csm_config cfg;
    csm_error err;
    const char *sets[] = {"solver.alpha=0.25", "time.frames=7", "objects.0.position=[0, 2, 0]"};
    if (csm_config_load(p, sets, 3, &cfg, &err)) fail_msg("%s", err.msg);
    unlink(p);
    assert_int_equal(cfg.frames, 7);
    assert_close(cfg.dt, 1.0 / 60.0, 1e-15);
    assert_close(csm_cfg_value(&cfg.integrator, "alpha")->num, 0.25, 0);
    assert_close(((const csm_body_params *)csm_cfg_params(&cfg.objects[0].body))->position[1], 2.0, 0);
    assert_string_equal(cfg.rotation.plugin->name, "polar_apq");
    assert_string_equal(cfg.clustering.plugin->name, "random_radius");
    assert_non_null(strstr(cfg.resolved, "substeps: 1"));
    assert_non_null(strstr(cfg.resolved, "alpha: 0.25"));
    /* the resolved text is itself a config that resolves to the same text */
    const char *p2 = write_temp(cfg.resolved, strlen(cfg.resolved));
    csm_config again;
    if (csm_config_load(p2, NULL, 0, &again, &err)) fail_msg("%s", err.msg);
    unlink(p2);
    assert_string_equal(again.resolved, cfg.resolved);
    csm_config_free(&again);
    csm_config_free(&cfg);
}

static void test_json_config(void **state)
{
    (void)state;
    csm_register_builtins();
    const char *json = "{\"objects\": [{\"shape\": {\"type\": \"sphere\", \"radius\": 0.5}}], \"seed\": 4}";
    snprintf(path, sizeof path, "/tmp/csm_test_XXXXXX.json");
    int fd = mkstemps(path, 5);
    assert_true(write(fd, json, strlen(json)) == (ssize_t)strlen(json));
    close(fd);
    csm_config cfg;
    csm_error err;
    if (csm_config_load(path, NULL, 0, &cfg, &err)) fail_msg("%s", err.msg);
    unlink(path);
    assert_int_equal(cfg.seed, 4);
    csm_config_free(&cfg);
}

static void test_files(void **state)
{
    (void)state;
    csm_register_builtins();
    csm_config cfg;
    csm_error err;
    assert_int_not_equal(csm_config_load("/nonexistent/x.yaml", NULL, 0, &cfg, &err), 0);
    assert_int_equal(err.code, 2);
    assert_non_null(strstr(err.msg, "/nonexistent/x.yaml: cannot open the config"));
    assert_int_not_equal(csm_config_load("/tmp", NULL, 0, &cfg, &err), 0);
    assert_non_null(strstr(err.msg, "is a folder, not a config file"));
    expect_error_sets("", 0, NULL, 0, "@:1: empty config", NULL);
    expect_error_sets("# only a comment\n", 17, NULL, 0, "empty config", NULL);
    static const char binary[] = "name: a\n\0\x01\x02garbage";
    expect_error_sets(binary, sizeof binary - 1, NULL, 0, "@:2: binary data", NULL);
    /* found by fuzzing: an invalid byte in a directive line made the YAML parser loop forever */
    static const char directive[] = "# A r6\n%t\x8d: 06\ntime:@}ta:";
    expect_error_sets(directive, sizeof directive - 1, NULL, 0, "@:2: not UTF-8 text (byte 0x8d)", NULL);
    static const char overlong[] = "name: \xc0\xaf\nobjects: [{shape: {type: box}}]\n";
    expect_error_sets(overlong, sizeof overlong - 1, NULL, 0, "@:1: not UTF-8 text (byte 0xc0)", NULL);
    /* found by fuzzing: a quoted value that spans lines still makes a one-line message */
    EXPECT("objects:\n  - shape: {type: p\n\n  oints}\n", "@:2: objects[0].shape.type = 'p\\noints' is not one of");
    /* found by fuzzing: "0.3\f" read as 0.3, then resolved to a string */
    EXPECT("clustering: {radius: 0.3\f}\nobjects: [{shape: {type: box}}]\n", "@:1: a control character (byte 0x0c)");
    static const char cut[] = "name: caf\xc3";
    expect_error_sets(cut, sizeof cut - 1, NULL, 0, "@:1: not UTF-8 text (byte 0xc3)", NULL);
}

static void test_syntax(void **state)
{
    (void)state;
    EXPECT("objects: [\n  {shape: {type: box}\n", "@:");
    EXPECT("- just\n- a list\n", "@:1: a config must be a mapping");
    EXPECT("name: a\nname: b\n", "@:2: duplicate key 'name' (first given on line 1)");
    EXPECT("a: &x 1\nb: *x\n", "aliases are not supported");
    /* a lone carriage return: libfyaml 0.8 crashed reporting an unclosed quote after one (found
       by fuzz_set; tests/fuzz/config/lone_cr_in_quote) */
    EXPECT("name: x\nsolver: {alpha: 'a,\rb: 1}\n", "@:2: a carriage return without a line feed");
    /* CRLF line breaks are line breaks */
    csm_register_builtins();
    const char *crlf = "name: crlf\r\nobjects:\r\n  - shape: {type: box}\r\nsolver: {alpha: 0.25}\r\n";
    csm_config cfg;
    csm_error err;
    if (csm_config_load_text("crlf.yaml", crlf, NULL, 0, &cfg, &err)) fail_msg("%s", err.msg);
    assert_true(csm_cfg_value(&cfg.integrator, "alpha")->num == 0.25);
    csm_config_free(&cfg);
}

static void test_keys(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof text, "%ssolvr: {alpha: 0.1}\n", GOOD);
    EXPECT(text, "@:8: unknown key solvr (did you mean 'solver'?)");
    snprintf(text, sizeof text, "%s  alpah: 0.1\n", GOOD);
    EXPECT(text, "@:8: unknown key solver.alpah (did you mean 'alpha'?)");
    snprintf(text, sizeof text, "%s  zzzzzzz: 1\n", GOOD);
    EXPECT(text, "unknown key solver.zzzzzzz (valid keys:");
    EXPECT("name: x\n", "objects is required");
    EXPECT("objects: []\n", "objects must be a non-empty list");
    EXPECT("objects:\n  - mass: 1\n", "@:2: objects[0].shape is required");
    EXPECT("objects:\n  - shape: {size: [1, 1, 1]}\n", "objects[0].shape.type is required (one of: box, sphere");
    EXPECT("objects:\n  - shape: {type: box}\n    pinned: {below: {axis: y}}\n", "objects[0].pinned.below.value is required");
}

static void test_values(void **state)
{
    (void)state;
    char text[1024];
    const char *cases[][2] = {
        {"  alpha: 1.7\n", "@:7: solver.alpha = 1.7 is outside [0, 1]"},
        {"  alpha: abc\n", "@:7: solver.alpha = 'abc' is not a number"},
        {"  alpha: \"0.5\"\n", "solver.alpha = '0.5' is not a number"},
        {"  alpha: .nan\n", "@:7: solver.alpha = .nan is not a finite number"},
        {"  alpha: .inf\n", "solver.alpha = .inf is not a finite number"},
        {"  alpha: 1e400\n", "solver.alpha = 1e400 is not a finite number"},
        {"  alpha: [1, 2]\n", "solver.alpha must be a number"},
        {"  rotation: polar_q\n", "@:7: solver.rotation = 'polar_q' is not a known rotation (valid: polar_apq, polar_f)"},
        {"  svd: eigen\n", "solver.svd = 'eigen' is not one of fast|lapacke"},
        {"  mode: cubic\n", "@:7: solver.mode = 'cubic' is not one of rigid|linear|quadratic"},
        {"  beta: 1.5\n", "@:7: solver.beta = 1.5 is outside [0, 1]"},
        {"  gamma: -1\n", "@:7: solver.gamma = -1 is outside"},
        {"  iterations: 2.5\n", "@:7: solver.iterations = 2.5 must be an integer"},
        /* one rule for YAML tags: none is taken, whatever it says (a key's table gives its type) */
        {"  alpha: !!str 0.3\n", "@:7: YAML tag '!!str': configs take no tags"},
        {"  alpha: !!float \"0.3\"\n", "@:7: YAML tag '!!float'"},
        {"  rotation: !!int polar_f\n", "@:7: YAML tag '!!int'"},
        {"  damping: !mine 0.1\n", "@:7: YAML tag '!mine'"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(text, sizeof text, "%s%s", GOOD_BASE, cases[k][0]);
        EXPECT(text, cases[k][1]);
    }
    EXPECT("objects:\n  - shape: {type: box}\nsolver: {integrator: verlet}\n",
           "@:3: solver.integrator = 'verlet' is not a known integrator (valid: shape_matching");
    EXPECT("objects: !!seq\n  - shape: {type: box}\n", "@:1: YAML tag '!!seq'");
    EXPECT("time: {frames: 2.5}\nobjects:\n  - shape: {type: box}\n", "@:1: time.frames = 2.5 must be an integer");
    EXPECT("time: {dt: 0}\nobjects:\n  - shape: {type: box}\n", "time.dt = 0 is outside");
    /* an integer the double it parses to cannot hold is refused, not rounded to its neighbour */
    EXPECT("seed: 9007199254740993\nobjects:\n  - shape: {type: box}\n",
           "@:1: seed = 9007199254740993 is not exactly an integer csm can hold (at most 2^53 = 9007199254740992)");
    EXPECT("objects:\n  - shape: {type: box, size: [1, 1]}\n", "@:2: objects[0].shape.size must be a list of three numbers");
    EXPECT("objects:\n  - shape: {type: blob}\n", "objects[0].shape.type = 'blob' is not one of: box, sphere, cylinder, torus, points");
    EXPECT("objects:\n  - shape: {type: box}\n    deform: [[1, 0], [0, 1]]\n", "objects[0].deform must be a 3x3 matrix");
    EXPECT("objects:\n  - shape: {type: box}\nforces: [{type: magnet}]\n", "forces[0].type = 'magnet' is not a known force (valid: gravity");
    EXPECT("objects:\n  - shape: {type: box}\nforces: [{g: [0, 1, 0]}]\n", "forces[0].type is required");
    EXPECT("objects:\n  - shape: {type: box}\ncolliders: [{type: plane, restitution: 2}]\n",
           "@:3: colliders[0].restitution = 2 is outside [0, 1]");
    EXPECT("objects:\n  - shape: {type: box}\n    pinned: {indices: [0, -2]}\n", "@:3: objects[0].pinned.indices = -2 is outside");
    EXPECT("objects:\n  - shape: {type: box}\n    pinned: {indices: 3}\n", "@:3: objects[0].pinned.indices must be a non-empty list");
    EXPECT("objects:\n  - shape: {type: box}\n    pinned: {left: 3}\n", "@:3: unknown key objects[0].pinned.left (valid keys: below, above, indices)");
    EXPECT("objects:\n  - shape: {type: box}\ncolliders: [{type: sphere}]\n", "colliders[0].radius");
    EXPECT("objects:\n  - shape: {type: box}\nplasticity: {model: jones}\n", "plasticity.model = 'jones' is not a known plasticity");
    EXPECT("objects:\n  - shape: {type: box}\noutput: {every: 0}\n", "output.every = 0 is outside");
    EXPECT("objects:\n  - shape: {type: box}\nplugins: [/nonexistent/libx.so]\n", "@:3: cannot load plugin /nonexistent/libx.so");
}

/* Errors only the built simulation can find still name file, line and key. */
static void expect_sim_error(const char *text, const char *want)
{
    csm_register_builtins();
    const char *p = write_temp(text, strlen(text));
    csm_config cfg;
    csm_error err = {{0}, 0};
    if (csm_config_load(p, NULL, 0, &cfg, &err)) fail_msg("%s", err.msg);
    csm_sim sim;
    int rc = csm_sim_create(&cfg, &sim, &err);
    csm_config_free(&cfg);
    unlink(p);
    if (rc == 0) {
        csm_sim_destroy(&sim);
        fail_msg("simulation was built:\n%s", text);
    }
    assert_int_equal(err.code, 2);
    char full[256];
    snprintf(full, sizeof full, "%s%s", p, want);
    if (!strstr(err.msg, full)) fail_msg("message '%s' lacks '%s'", err.msg, full);
}

static void test_simulation_errors(void **state)
{
    (void)state;
    expect_sim_error("objects:\n  - shape: {type: points, positions: [[0, 0, 0]]}\n    pinned: {indices: [1]}\n",
                     ":2: objects[0].pinned.indices: index 1, but the object has 1 particles");
    expect_sim_error("objects:\n  - shape: {type: box}\ncolliders:\n  - {type: sphere, radius: 0}\n",
                     ":4: sphere: radius must be positive");
    expect_sim_error("objects:\n  - shape: {type: box}\ncolliders:\n  - {type: plane, normal: [0, 0, 0]}\n",
                     ":4: plane: normal must not be zero");
    expect_sim_error("objects:\n  - shape: {type: box}\nforces:\n  - {type: compress, object: 1}\n",
                     ":4: compress: object = 1, but the config has 1 object(s)");
    expect_sim_error("objects:\n  - shape: {type: box}\nforces:\n  - {type: twist, axis: [0, 0, 0]}\n",
                     ":4: twist: axis must not be zero");
    expect_sim_error("objects:\n  - shape: {type: box}\nrecluster:\n  method: embedded\n  fade_out: 5\n  fade_in: 5\n",
                     ":6: recluster.fade_in = 5 must be fewer than fade_out = 5");
}

static void test_overrides(void **state)
{
    (void)state;
    const char *bad[] = {"solver.alpha=2"};
    expect_error_sets(GOOD, strlen(GOOD), bad, 1, "--set #1: solver.alpha = 2 is outside [0, 1]", NULL);
    const char *noeq[] = {"solver.alpha"};
    expect_error_sets(GOOD, strlen(GOOD), noeq, 1, "--set solver.alpha: expected key.path=value", NULL);
    const char *index[] = {"objects.3.mass=1"};
    expect_error_sets(GOOD, strlen(GOOD), index, 1, "'3' is not an index of a list of 1", NULL);
    const char *unknown[] = {"solver.betta=1"};
    expect_error_sets(GOOD, strlen(GOOD), unknown, 1, "--set #1: unknown key solver.betta", NULL);
    /* a --set value is text as a config is: an invalid byte in a directive hung the parser
       (found by fuzz_set; tests/fuzz/set/directive_hang) */
    const char *directive[] = {"time.frames=2", "sweep=%solver.a\xc5lpha: [0.1, 02\xff\xff.}"};
    expect_error_sets(GOOD, strlen(GOOD), directive, 2, "--set #2: not UTF-8 text (byte 0xc5)", NULL);
    const char *control[] = {"name=a\x01" "b"};
    expect_error_sets(GOOD, strlen(GOOD), control, 1, "--set #1: a control character (byte 0x01)", NULL);
}

/* Every shipped config's resolved text (what a log keeps, and what csm run --resume reads back)
   loads again to the same resolved text. */
static void test_shipped_configs_resolve_again(void **state)
{
    (void)state;
    csm_register_builtins();
    const char *dir = CSM_TEST_DIR "/../experiments/configs";
    DIR *d = opendir(dir);
    assert_non_null(d);
    int checked = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml")) continue;
        char file[1024];
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        csm_config cfg, again;
        csm_error err;
        if (csm_config_load(file, NULL, 0, &cfg, &err)) fail_msg("%s", err.msg);
        if (csm_config_load_text(file, cfg.resolved, NULL, 0, &again, &err)) fail_msg("%s: resolved: %s", file, err.msg);
        if (strcmp(again.resolved, cfg.resolved)) fail_msg("%s: the resolved config resolves to other text", file);
        csm_config_free(&again);
        csm_config_free(&cfg);
        checked++;
    }
    closedir(d);
    assert_true(checked >= 10);
}

/* Registration checks a plugin before it is used: its version, and that each table row's field
   has the size its type needs. */
typedef struct reg_params {
    double k;
    int32_t n;
} reg_params;
static const csm_param_spec reg_good[] = {CSM_P_REAL(reg_params, k, 1, 0, 2, "k"), CSM_P_INT(reg_params, n, 1, 0, 9, "n"),
                                          CSM_PARAM_END};
/* a real read into an int32_t: the loader would write 8 bytes into 4 */
static const csm_param_spec reg_bad[] = {CSM_PARAM_FIELD("n", CSM_REAL, reg_params, n, 0, 0, 1, "n", NULL, 0, 0, 0, NULL, 0),
                                         CSM_PARAM_END};

static void test_registration_checks(void **state)
{
    (void)state;
    static const csm_force good = {.version = 1, .name = "reg_good", .summary = "", .params = reg_good};
    static const csm_force future = {.version = CSM_FORCE_VERSION + 1, .name = "reg_future", .summary = "",
                                      .params = reg_good};
    static const csm_force bad = {.version = 1, .name = "reg_bad", .summary = "", .params = reg_bad};
    static const csm_force nameless = {.version = 1, .params = reg_good};
    assert_int_equal(csm_register_force(&good), 0);
    assert_ptr_equal(csm_registry_find(CSM_KIND_FORCE, "reg_good"), &good);
    assert_int_equal(csm_register_force(&future), -1);
    assert_int_equal(csm_register_force(&bad), -1);
    assert_int_equal(csm_register_force(&nameless), -1);
    assert_null(csm_registry_find(CSM_KIND_FORCE, "reg_future"));
    assert_null(csm_registry_find(CSM_KIND_FORCE, "reg_bad"));
    /* the loader fills the struct from the table: a default, then a given value */
    csm_register_builtins();
    csm_config cfg;
    csm_error err;
    const char *text = "objects: [{shape: {type: box}}]\nforces: [{type: reg_good, n: 7}]\n";
    if (csm_config_load_text("reg.yaml", text, NULL, 0, &cfg, &err)) fail_msg("%s", err.msg);
    const reg_params *p = csm_cfg_params(&cfg.forces[0]);
    assert_true(p->k == 1.0);
    assert_int_equal(p->n, 7);
    csm_config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_config_resolves_defaults),
        cmocka_unit_test(test_json_config),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_simulation_errors),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_shipped_configs_resolve_again),
        cmocka_unit_test(test_registration_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* fuzz_config.c -- libFuzzer target: the YAML/JSON config loader.
 *
 * Feeds each input to run_load_buffer (cfg_load_buffer, the loader behind
 * every config file and every daemon request's cluster and job, then the
 * fits) from an exact-size copy, so that AddressSanitizer catches a read
 * one byte past the text. Any input must give a run or an error message,
 * never a crash, a hang or a leak;
 * on success the run is freed, on failure the message must be a non-empty
 * NUL-terminated string that fits the buffer.
 *
 * Seeds: fuzz/corpus/config/ (the shipped configs and the test configs).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/runload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    char err[2048];
    err[0] = '\0';
    cfg_run *run = run_load_buffer("fuzz.yaml", text, size, err, sizeof err);
    if (run) {
        cfg_free(run);
    } else if (err[0] == '\0' || memchr(err, '\0', sizeof err) == NULL) {
        abort(); /* an error must come with a message */
    }
    free(text);
    return 0;
}

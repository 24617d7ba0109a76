/* Temporary stub: the config implementation lands with the foundation issue. */
#include "cfg.h"

tb_code cfg_help_text(tb_buf *out) { return tb_buf_puts(out, "(not yet)\n"); }
tb_code cfg_help_markdown(tb_buf *out) { return tb_buf_puts(out, "(not yet)\n"); }

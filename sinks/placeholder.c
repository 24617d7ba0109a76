/* placeholder until this module lands */
int tb_sinks_placeholder(void);
int tb_sinks_placeholder(void) { return 0; }

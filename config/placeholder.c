/* placeholder until this module lands */
int tb_config_placeholder(void);
int tb_config_placeholder(void) { return 0; }

/* placeholder until this module lands */
int tb_cache_placeholder(void);
int tb_cache_placeholder(void) { return 0; }

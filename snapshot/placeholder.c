/* placeholder until this module lands */
int tb_snapshot_placeholder(void);
int tb_snapshot_placeholder(void) { return 0; }

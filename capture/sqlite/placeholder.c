/* placeholder until this module lands */
int tb_capture_sqlite_placeholder(void);
int tb_capture_sqlite_placeholder(void) { return 0; }

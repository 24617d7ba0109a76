/* placeholder until this module lands */
int tb_capture_mysql_placeholder(void);
int tb_capture_mysql_placeholder(void) { return 0; }

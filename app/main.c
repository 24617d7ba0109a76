/* placeholder: the CLI lands with the foundation issue */
#include <stdio.h>
int main(void) { puts("tributary"); return 0; }

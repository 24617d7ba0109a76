#include "tb_num.h"

#include <string.h>

bool tb_parse_u64_n(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    if (!s || n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return false;
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

bool tb_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    return s && tb_parse_u64_n(s, strlen(s), max, out);
}

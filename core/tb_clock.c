/* tb_clock: monotonic and real-time clocks (see tb_clock.h). */
#include "tb_clock.h"

#include <time.h>

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tb_mono_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

int64_t tb_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t tb_wall_ms(void) { return clock_ms(CLOCK_REALTIME); }
int64_t tb_mono_coarse_ms(void) { return clock_ms(CLOCK_MONOTONIC_COARSE); }
int64_t tb_wall_coarse_ms(void) { return clock_ms(CLOCK_REALTIME_COARSE); }

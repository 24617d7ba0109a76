/*
 * tb_clock: the clocks of tributary, in one place.
 *
 * tb_mono_ms/us: the monotonic clock, for intervals, deadlines and rates (it
 * never goes back, and does not follow changes of the system time).
 * tb_wall_ms: the real-time clock, for times that leave the process (event
 * and status timestamps, lease values); milliseconds since the Unix epoch.
 * The hot paths that can do with a few milliseconds of error read the
 * coarse clocks themselves (ksink.c, ksink_lease.c).
 */
#ifndef TB_CLOCK_H
#define TB_CLOCK_H

#include <stdint.h>

int64_t tb_mono_ms(void);
int64_t tb_mono_us(void);
int64_t tb_wall_ms(void);

#endif

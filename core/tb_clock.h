/*
 * tb_clock: the clocks of tributary, in one place.
 *
 * tb_mono_ms/us: the monotonic clock, for intervals, deadlines and rates (it
 * never goes back, and does not follow changes of the system time).
 * tb_wall_ms: the real-time clock, for times that leave the process (event
 * and status timestamps, lease values); milliseconds since the Unix epoch.
 * tb_mono_coarse_ms/tb_wall_coarse_ms: the same clocks as the kernel last
 * ticked them (a few milliseconds behind, much cheaper to read): for the
 * hot paths that run per event and can do with a few ms of error.
 */
#ifndef TB_CLOCK_H
#define TB_CLOCK_H

#include <stdint.h>

int64_t tb_mono_ms(void);
int64_t tb_mono_us(void);
int64_t tb_wall_ms(void);
int64_t tb_mono_coarse_ms(void);
int64_t tb_wall_coarse_ms(void);

#endif

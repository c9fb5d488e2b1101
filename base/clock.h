/* clock.h -- the monotonic clock, for deadlines, budgets and timings.
 *
 * CLOCK_MONOTONIC never jumps with the wall clock, so differences of two
 * readings are elapsed times. Seconds as a double serve budgets and the
 * figures we print (nanosecond resolution is kept for some 100 days of
 * uptime); nanoseconds as an integer serve the HTTP access log, which
 * reports microseconds exactly. The wall clock is here too, for the
 * timestamps the daemon reports.
 */
#ifndef STRATA_BASE_CLOCK_H
#define STRATA_BASE_CLOCK_H

#include <stdint.h>

/* clock_now_s returns the monotonic clock in seconds. */
double clock_now_s(void);

/* clock_now_ns returns the monotonic clock in nanoseconds. */
uint64_t clock_now_ns(void);

/* clock_wall_s returns the wall clock (CLOCK_REALTIME) in seconds since
 * the Unix epoch: for timestamps reported to people, never for elapsed
 * times. */
double clock_wall_s(void);

#endif

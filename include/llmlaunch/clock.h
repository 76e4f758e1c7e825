/* The one clock for deadlines and durations: monotonic, so a time step (NTP, a
 * suspended VM) neither fires a timeout early nor makes one never fire. */
#ifndef LLMLAUNCH_CLOCK_H
#define LLMLAUNCH_CLOCK_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double ll_now_s(void);

/* Milliseconds left until `deadline` (ll_now_s() scale) for poll(): 0 when it has
 * passed, rounded up so a wait never ends just before its deadline. */
int ll_poll_ms_until(double deadline);

#endif

/*
 * signal_wait: the main thread's wait for the signals it handles (blocked in
 * every thread, taken with sigwait/sigtimedwait), with a periodic tick woven
 * in (the systemd watchdog) that stays on schedule however many signals come.
 */
#ifndef MUSICD_SIGNAL_WAIT_H
#define MUSICD_SIGNAL_WAIT_H

#include <signal.h>

struct signal_wait {
	const sigset_t *handled;
	unsigned long long tick_ms; /* 0: no tick */
	unsigned long long due_ms;  /* CLOCK_MONOTONIC, when the next tick is due */
};

/* Waits for the signals in handled (which must stay valid); a tick every tick_ms, or none for 0. */
void signal_wait_init(struct signal_wait *wait, const sigset_t *handled, unsigned long long tick_ms);
/* Blocks until one of the signals arrives (returns its number) or a tick is due (returns 0). */
int signal_wait_next(struct signal_wait *wait);

#endif

/*
 * signal_wait: sigwait when there is no tick; otherwise sigtimedwait until the
 * tick's deadline, which moves by tick_ms each time it is reached, so a storm
 * of signals cannot starve the tick (the watchdog would kill musicd).
 */
#include "ops/signal_wait.h"

#include <time.h>

#include "base/clock.h"

void signal_wait_init(struct signal_wait *wait, const sigset_t *handled, unsigned long long tick_ms)
{
	wait->handled = handled;
	wait->tick_ms = tick_ms;
	wait->due_ms = clock_now_ms(); /* the first tick at once */
}

int signal_wait_next(struct signal_wait *wait)
{
	for (;;) {
		if (wait->tick_ms == 0) {
			int signal_number = 0;
			if (sigwait(wait->handled, &signal_number) == 0)
				return signal_number;
			continue;
		}
		unsigned long long now = clock_now_ms();
		if (now >= wait->due_ms) {
			wait->due_ms = now + wait->tick_ms;
			return 0;
		}
		unsigned long long left = wait->due_ms - now;
		struct timespec timeout = {.tv_sec = (time_t)(left / 1000),
					   .tv_nsec = (long)(left % 1000) * 1000000L};
		int signal_number = sigtimedwait(wait->handled, NULL, &timeout);
		if (signal_number > 0)
			return signal_number;
		/* EAGAIN (the tick is due) or EINTR: the loop looks again. */
	}
}

/*
 * notify: sd_notify(3) messages for systemd's Type=notify. libsystemd does the
 * protocol (an AF_UNIX datagram to $NOTIFY_SOCKET, which may be abstract); this
 * file only decides the messages. A failed send has nowhere better to go than
 * the debug log: systemd notices a missing READY=1 or WATCHDOG=1 by itself.
 */
#include "ops/notify.h"

#include <stdio.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"

#define NOTIFY_MESSAGE_MAX 512

static unsigned long long watchdog_interval_ms;

static void send_state(const char *state)
{
	/* 0: keep NOTIFY_SOCKET in the environment, so each later message finds it too. */
	int sent = sd_notify(0, state);
	if (sent < 0)
		log_debug("sd_notify %s: error %d", state, -sent);
}

void notify_init(void)
{
	uint64_t usec = 0;
	/* > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID (if set) is this process. */
	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		watchdog_interval_ms = usec / 2 / 1000;
		if (watchdog_interval_ms == 0)
			watchdog_interval_ms = 1;
	}
}

void notify_ready(const char *status)
{
	char message[NOTIFY_MESSAGE_MAX];
	if (status == NULL ||
	    snprintf(message, sizeof(message), "READY=1\nSTATUS=%s", status) >= (int)sizeof(message))
		send_state("READY=1");
	else
		send_state(message);
}

void notify_reloading(void)
{
	char message[NOTIFY_MESSAGE_MAX];
	snprintf(message, sizeof(message), "RELOADING=1\nMONOTONIC_USEC=%llu", clock_now_us());
	send_state(message);
}

void notify_stopping(void)
{
	send_state("STOPPING=1");
}

void notify_watchdog(void)
{
	send_state("WATCHDOG=1");
}

unsigned long long notify_watchdog_interval_ms(void)
{
	return watchdog_interval_ms;
}

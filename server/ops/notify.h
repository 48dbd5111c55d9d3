/*
 * notify: telling systemd (Type=notify) where musicd is in its life, through
 * sd_notify(3) on $NOTIFY_SOCKET; every call is a no-op when musicd was not
 * started by a service manager that listens. Called from the main thread.
 *
 *   notify_ready()      once every worker runs its loop (and again after a reload)
 *   notify_reloading()  as a reload (SIGHUP) starts; follow it with notify_ready()
 *   notify_stopping()   as shutdown starts
 *   notify_watchdog()   every notify_watchdog_interval_ms() while every worker answers
 */
#ifndef MUSICD_NOTIFY_H
#define MUSICD_NOTIFY_H

/* Reads the watchdog setting (WATCHDOG_USEC, WATCHDOG_PID); call once before the others. */
void notify_init(void);
/* READY=1, with status (e.g. "listening on 127.0.0.1:23001") as STATUS=, which may be NULL. */
void notify_ready(const char *status);
/* RELOADING=1 with MONOTONIC_USEC= (what systemd's Type=notify-reload asks for). */
void notify_reloading(void);
/* STOPPING=1. */
void notify_stopping(void);
/* WATCHDOG=1. */
void notify_watchdog(void);
/*
 * How often to call notify_watchdog, in milliseconds: half of WATCHDOG_USEC
 * when the unit sets WatchdogSec= (and WATCHDOG_PID, if set, is this process),
 * else 0 (no watchdog: never call it).
 */
unsigned long long notify_watchdog_interval_ms(void);

#endif

/*
 * file_lease: leases and the thread that answers their breaks.
 *
 * How a break goes: a writer's open() (or truncate) finds our read lease; the
 * kernel queues the watch's signal, directed at its thread (F_SETOWN_EX with
 * F_OWNER_TID, so no other thread ever sees it, and none need block it), with
 * the descriptor in si_fd (F_SETSIG), and puts the writer to sleep. The thread
 * wakes in sigwaitinfo, sets the holder's flag, then gives the lease up
 * (F_UNLCK), which wakes the writer. A writer that opened with O_NONBLOCK gets
 * EWOULDBLOCK instead and tries again; the break goes the same way.
 *
 * Who may be told about which descriptor: holders, indexed by descriptor, is
 * set before the lease is taken and cleared when it is given up, all under
 * lock, so a notice always finds the flag of the lease it is about. A notice
 * queued for a lease since given up finds either nothing or a newer lease on
 * a descriptor of the same number, which is then marked broken too: needless,
 * never wrong. If the kernel cannot queue a notice, it sends SIGIO, naming no
 * descriptor: then every lease is treated as broken.
 *
 * Linux clears a descriptor's owner and signal when its lease is given up, and
 * a lease taken on a descriptor without an owner signals the whole process
 * (SIGIO, whose default is to terminate it), so both are set before every
 * lease, not once per descriptor.
 */
#include "media/file_lease.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "media/media.h"

/* The watch's signal is SIGRTMIN + this; glibc keeps the ones below SIGRTMIN for itself. */
#define FILE_LEASE_SIGNAL_OFFSET 7
#define FILE_LEASE_HOLDERS_MIN 64

struct file_lease_watch {
	pthread_t thread;
	pid_t thread_id; /* the kernel's, for F_SETOWN_EX; set before file_lease_watch_new returns */
	int signal_number;
	_Atomic bool stopping;
	pthread_barrier_t started;
	pthread_mutex_t lock;	 /* guards holders, and the taking and giving up of every lease */
	_Atomic bool **holders;	 /* by descriptor: the flag of the lease held on it, or NULL */
	size_t holder_slots;	 /* length of holders */
};

static void watched_signals(const struct file_lease_watch *watch, sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, watch->signal_number);
	sigaddset(set, SIGIO);
}

/* Marks fd's lease broken and gives it up, if one is held. Lock held. */
static void break_lease(struct file_lease_watch *watch, int fd)
{
	if (fd < 0 || (size_t)fd >= watch->holder_slots || watch->holders[fd] == NULL)
		return;
	atomic_store(watch->holders[fd], true); /* before the writer can go on: see the top */
	fcntl(fd, F_SETLEASE, F_UNLCK);
	watch->holders[fd] = NULL;
}

static void break_every_lease(struct file_lease_watch *watch)
{
	for (size_t fd = 0; fd < watch->holder_slots; fd++)
		break_lease(watch, (int)fd);
}

static void *watch_leases(void *argument)
{
	struct file_lease_watch *watch = argument;
	sigset_t set;
	watched_signals(watch, &set); /* blocked in this thread since its creation */
	watch->thread_id = gettid();
	pthread_barrier_wait(&watch->started);
	for (;;) {
		siginfo_t info;
		int number = sigwaitinfo(&set, &info);
		if (number < 0)
			continue; /* EINTR */
		if (info.si_code == SI_QUEUE) {
			if (atomic_load(&watch->stopping))
				break;
			continue; /* a signal queued by anyone else is no notice */
		}
		pthread_mutex_lock(&watch->lock);
		if (number == watch->signal_number)
			break_lease(watch, info.si_fd);
		else
			break_every_lease(watch); /* SIGIO: a notice the kernel could not queue */
		pthread_mutex_unlock(&watch->lock);
	}
	/* Leases still held (there should be none) must not hold writers back. */
	pthread_mutex_lock(&watch->lock);
	break_every_lease(watch);
	pthread_mutex_unlock(&watch->lock);
	return NULL;
}

struct file_lease_watch *file_lease_watch_new(void)
{
	struct file_lease_watch *watch = calloc(1, sizeof(*watch));
	if (watch == NULL)
		return NULL;
	watch->signal_number = SIGRTMIN + FILE_LEASE_SIGNAL_OFFSET;
	pthread_mutex_init(&watch->lock, NULL);
	pthread_barrier_init(&watch->started, NULL, 2);

	/*
	 * The thread starts with every signal blocked: its own are taken by
	 * sigwaitinfo, and the process's (SIGTERM, SIGINT ...) must never be
	 * delivered to it, or their default action ends the process.
	 */
	sigset_t set, previous;
	sigfillset(&set);
	pthread_sigmask(SIG_BLOCK, &set, &previous);
	int error = pthread_create(&watch->thread, NULL, watch_leases, watch);
	pthread_sigmask(SIG_SETMASK, &previous, NULL);
	if (error != 0) {
		pthread_barrier_destroy(&watch->started);
		pthread_mutex_destroy(&watch->lock);
		free(watch);
		return NULL;
	}
	pthread_barrier_wait(&watch->started);
	return watch;
}

void file_lease_watch_free(struct file_lease_watch *watch)
{
	if (watch == NULL)
		return;
	atomic_store(&watch->stopping, true);
	pthread_sigqueue(watch->thread, watch->signal_number, (union sigval){0});
	pthread_join(watch->thread, NULL);
	pthread_barrier_destroy(&watch->started);
	pthread_mutex_destroy(&watch->lock);
	free(watch->holders);
	free(watch);
}

/* Room in holders for fd. Lock held. */
static int make_room(struct file_lease_watch *watch, int fd)
{
	if ((size_t)fd < watch->holder_slots)
		return 0;
	size_t slots = watch->holder_slots ? watch->holder_slots : FILE_LEASE_HOLDERS_MIN;
	while (slots <= (size_t)fd)
		slots *= 2;
	_Atomic bool **grown = realloc(watch->holders, slots * sizeof(*grown));
	if (grown == NULL)
		return -1;
	memset(grown + watch->holder_slots, 0, (slots - watch->holder_slots) * sizeof(*grown));
	watch->holders = grown;
	watch->holder_slots = slots;
	return 0;
}

enum file_lease_result file_lease_begin(struct file_lease_watch *watch, int fd,
					_Atomic bool *broken)
{
	/* Only where every write goes through this kernel, so breaks the lease. */
	struct statfs filesystem;
	if (fd < 0 || fstatfs(fd, &filesystem) != 0 ||
	    !media_filesystem_local((long)filesystem.f_type))
		return FILE_LEASE_NEVER;
	struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = watch->thread_id};
	enum file_lease_result result = FILE_LEASE_NEVER;

	pthread_mutex_lock(&watch->lock);
	if (make_room(watch, fd) != 0) {
		result = FILE_LEASE_BUSY; /* out of memory now; perhaps not later */
		goto done;
	}
	if (fcntl(fd, F_SETSIG, watch->signal_number) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0)
		goto done;
	atomic_store(broken, false);
	watch->holders[fd] = broken; /* before the lease: its first notice may come at once */
	if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
		result = FILE_LEASE_HELD;
	} else {
		/* EAGAIN: open for writing; EACCES: not our file; EINVAL: not on this one. */
		result = errno == EAGAIN ? FILE_LEASE_BUSY : FILE_LEASE_NEVER;
		watch->holders[fd] = NULL;
	}
done:
	pthread_mutex_unlock(&watch->lock);
	return result;
}

void file_lease_end(struct file_lease_watch *watch, int fd)
{
	pthread_mutex_lock(&watch->lock);
	if (fd >= 0 && (size_t)fd < watch->holder_slots && watch->holders[fd] != NULL) {
		fcntl(fd, F_SETLEASE, F_UNLCK);
		watch->holders[fd] = NULL;
	}
	pthread_mutex_unlock(&watch->lock);
}

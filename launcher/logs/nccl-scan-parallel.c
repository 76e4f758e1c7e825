/* One large file read by two threads, with the verdict one thread gives.
 *
 * The scanner's work falls in two halves of about the same cost on dense NCCL logs:
 * cutting lines into records and following wrapped lists (nccl-scan.c); and knowing
 * each record's process from its prefix and reading what the record says (the prefix
 * cache and the recognisers). The first half runs on the calling thread and hands every
 * record (struct hand) to a second thread, in file order, with the line number it had:
 * the second thread makes the calls one thread would make, with the same arguments, in
 * the same order (ncclscan_apply()). Neither half reads what the other writes: the
 * scanner owns the stream's lines and lists; the other side owns the processes, the
 * prefix cache, the warnings and the NCCL version, and its fields of the stream. A
 * record's bytes are copied into the queue, so a mapping can go as soon as the scanner
 * is done with it.
 *
 * Splitting the file into pieces read side by side would need every piece to know what
 * the lines before it left behind (a process's communicators by thread, the first line
 * that proved something, which list a wrapped line goes on), which only reading them
 * gives. */
#include "nccl-scan-internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAR_WINDOW (8u << 20)
#define PAR_READ_BUFFER (1u << 20)
#define PAR_DEFAULT_MIN (16u << 20)
/* Records are queued in blocks; the scanner waits when this many are not read yet,
 * which bounds the memory the queue takes (16 x 256 KiB). */
#define PIPE_BLOCK (256u << 10)
#define PIPE_MAX_FULL 16

void ll_ncclscan_set_threads(struct ll_ncclscan *s, unsigned threads, size_t min_bytes)
{
	s->threads = threads;
	s->parallel_min = min_bytes;
	s->threads_set = true;
}

struct pipe_block {
	struct pipe_block *next;
	size_t used, size;
	char data[];
};

struct ncclscan_pipe {
	pthread_mutex_t mu;
	pthread_cond_t more, room;
	struct pipe_block *head, *tail; /* full blocks, oldest first */
	size_t n_full;
	struct pipe_block *spare;       /* one read block kept for the scanner to fill again */
	bool done;
	struct pipe_block *cur;         /* the block the scanner fills (s->pipe_fill) */
	struct ll_ncclscan *s;
	struct ll_ncclscan_stream st;   /* the recognisers' view of the stream */
	pthread_t thread;
};

static struct pipe_block *block_new(size_t size)
{
	struct pipe_block *b = ll_malloc(sizeof(*b) + size);

	b->next = NULL;
	b->used = 0;
	b->size = size;
	return b;
}

/* Hand the scanner's block to the reader; a fresh one (the spare, if any) to fill. */
static void pipe_send(struct ncclscan_pipe *p, size_t need)
{
	struct pipe_block *b = p->cur, *fresh = NULL;

	b->used = p->s->pipe_fill.used;
	pthread_mutex_lock(&p->mu);
	if (b->used) {
		if (p->tail)
			p->tail->next = b;
		else
			p->head = b;
		p->tail = b;
		p->n_full++;
		pthread_cond_signal(&p->more);
		b = NULL;
	}
	while (p->n_full >= PIPE_MAX_FULL)
		pthread_cond_wait(&p->room, &p->mu);
	if (need <= PIPE_BLOCK && p->spare) {
		fresh = p->spare;
		p->spare = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	if (b) /* nothing in it, and too small */
		free(b);
	if (!fresh)
		fresh = block_new(need > PIPE_BLOCK ? need : PIPE_BLOCK);
	fresh->used = 0;
	fresh->next = NULL;
	p->cur = fresh;
	p->s->pipe_fill = (struct pipe_fill){ .data = fresh->data, .used = 0, .size = fresh->size, .last = NULL };
}

void ncclscan_pipe_room(struct ncclscan_pipe *p, size_t need)
{
	pipe_send(p, need);
}

static void *reader_main(void *arg)
{
	struct ncclscan_pipe *p = arg;

	for (;;) {
		struct pipe_block *b;

		pthread_mutex_lock(&p->mu);
		while (!p->head && !p->done)
			pthread_cond_wait(&p->more, &p->mu);
		b = p->head;
		if (b) {
			p->head = b->next;
			if (!p->head)
				p->tail = NULL;
		}
		pthread_mutex_unlock(&p->mu);
		if (!b)
			return NULL;
		for (size_t off = 0; off < b->used;) {
			const struct pipe_rec *rec = (const struct pipe_rec *)(const void *)(b->data + off);
			const char *text = (const char *)(rec + 1);
			struct hand h = { .kind = (enum hand_kind)rec->kind, .cont = (enum cont_kind)rec->cont,
					  .pre = text, .npre = rec->npre, .m = text + rec->moff, .n = rec->n,
					  .repeat = rec->repeat };

			p->st.lineno = rec->lineno;
			ncclscan_apply(p->s, &p->st, &h);
			off += sizeof(*rec) + ((rec->moff + rec->n + 7) & ~(size_t)7);
		}
		pthread_mutex_lock(&p->mu);
		p->n_full--;
		if (!p->spare && b->size == PIPE_BLOCK) {
			p->spare = b;
			b = NULL;
		}
		pthread_cond_signal(&p->room);
		pthread_mutex_unlock(&p->mu);
		free(b);
	}
}

/* The file through windows of a mapping, or pread where it cannot be mapped; then its
 * end. */
static int feed_file(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, int fd, off_t size)
{
	off_t off;

	for (off = 0; off < size; off += PAR_WINDOW) {
		size_t len = size - off < PAR_WINDOW ? (size_t)(size - off) : PAR_WINDOW;
		void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, off);

		if (m == MAP_FAILED) {
			if (off > 0)
				return -EIO; /* the file shrank */
			break;
		}
		ll_ncclscan_feed(s, st, m, len);
		munmap(m, len);
	}
	if (off == 0) {
		_cleanup_free_ char *buf = ll_malloc(PAR_READ_BUFFER);
		for (;;) {
			ssize_t got = pread(fd, buf, PAR_READ_BUFFER, off);
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				return -errno;
			if (got == 0)
				break;
			ll_ncclscan_feed(s, st, buf, (size_t)got);
			off += got;
		}
	}
	ll_ncclscan_flush(s, st);
	return 0;
}

static bool two_cpus(void)
{
	cpu_set_t set;

	/* The CPUs this process may run on (taskset, a container's cpuset). */
	return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) >= 2;
}

int ncclscan_parallel_file(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, int fd, off_t size)
{
	struct ncclscan_pipe *p;
	int r;

	if (s->threads_set ? s->threads == 1 || (size_t)size < s->parallel_min
			   : (size_t)size < PAR_DEFAULT_MIN || !two_cpus())
		return 1;
	p = ll_calloc(1, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->more, NULL);
	pthread_cond_init(&p->room, NULL);
	p->s = s;
	/* The recognisers' side of the stream moves to the other thread, and back after. */
	p->st.file = st->file; /* proofs point at the stream's own copy */
	p->st.last = st->last;
	p->st.tid = st->tid;
	p->st.last_slot = st->last_slot;
	p->st.cont_rank = st->cont_rank;
	p->st.cont_skip = st->cont_skip;
	p->cur = block_new(PIPE_BLOCK);
	s->pipe_fill = (struct pipe_fill){ .data = p->cur->data, .used = 0, .size = p->cur->size, .last = NULL };
	if (pthread_create(&p->thread, NULL, reader_main, p) != 0) {
		r = 1; /* as if one thread had been asked for */
		goto out;
	}
	s->pipe = p;
	r = feed_file(s, st, fd, size);
	pipe_send(p, 0);
	s->pipe = NULL;
	pthread_mutex_lock(&p->mu);
	p->done = true;
	pthread_cond_signal(&p->more);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	st->last = p->st.last;
	st->tid = p->st.tid;
	st->last_slot = p->st.last_slot;
	st->cont_rank = p->st.cont_rank;
	st->cont_skip = p->st.cont_skip;
out:
	free(p->cur);
	free(p->spare);
	pthread_cond_destroy(&p->room);
	pthread_cond_destroy(&p->more);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return r;
}

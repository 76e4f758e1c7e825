/* One large file read on every CPU the process may use, with the verdict one thread
 * gives.
 *
 * On dense NCCL logs most of the time goes to cutting lines into records (the 64-byte
 * masks, the markers, a message's kind): that work is split. The file is mapped whole
 * and cut into pieces of whole lines; each thread takes the next piece and cuts it into
 * records (struct pipe_rec: where the prefix and the message lie in the mapping, the
 * kind of record, its line number in the piece), as the scanner would, from a guessed
 * start: no wrapped list going on and no stripped lines to look for (the first piece
 * starts from the stream's real state). Whichever thread is free then reads the pieces'
 * records in file order with the real stream and scanner (ncclscan_apply(), the calls
 * one thread makes, with the same arguments, in the same order), so the processes, the
 * prefix cache, the warnings and the verdict are those one thread gives. The guess holds
 * when the piece before ends with no list open and the file has shown a marker or 1000
 * lines; where it does not (a wrapped device list cut by a piece's start, a file of
 * stripped lines), that piece is scanned again there, by the one thread, from the real
 * state. A piece's pages are unmapped once it has been read, so memory stays flat. */
#include "nccl-scan-internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define PAR_DEFAULT_MIN (16u << 20)
#define PAR_MAX_THREADS 8
/* A piece is read into a buffer of PAR_BUFFER bytes: its lines start in the first
 * PAR_PIECE_MAX bytes (less in a small file: PAR_PIECES_MIN pieces at least, so the
 * tests cut small files too), and the last one ends in the rest; a longer one takes a
 * buffer of its own. */
#define PAR_BUFFER (1u << 20)
#define PAR_PIECE_MAX (PAR_BUFFER - (64u << 10))
#define PAR_PIECE_MIN 4096u
#define PAR_PIECES_MIN 32
/* Pieces cut and not read yet, at most: each holds a buffer until it has been read.
 * Two more than the threads (one being read, one being cut by each other thread, one
 * ready), six at most: every slot is memory the kernel zeroes for this run. */
#define PAR_AHEAD 6
/* A slot: a piece's buffer, then room for its records. */
#define PAR_SLOT (2u << 20)

void ll_ncclscan_set_threads(struct ll_ncclscan *s, unsigned threads, size_t min_bytes)
{
	s->threads = threads;
	s->parallel_min = min_bytes;
	s->threads_set = true;
}

void ll_ncclscan_set_piece_size(struct ll_ncclscan *s, size_t bytes)
{
	s->piece_size = bytes < PAR_PIECE_MAX ? bytes : PAR_PIECE_MAX;
}

/* Records beyond those a piece's slot holds (a piece of very many short lines). */
struct rec_block {
	struct rec_block *next;
	size_t used, size;
	struct pipe_rec *recs;
	bool own;                       /* recs was allocated with the block */
};

/* A slot of the arena: one piece's text and its records. */
#define SLOT_RECS ((PAR_SLOT - PAR_BUFFER) / sizeof(struct pipe_rec))

struct piece {
	size_t start, end;              /* the lines that start in it: [start, end) of the file */
	size_t sync;                    /* where the line of its first record starts (from start):
					 * the lines before it are all a wrong guess can change */
	size_t ended;                   /* the end of its last ended line: the rest (the file's
					 * last line, without a newline) is fed to the stream as
					 * one thread feeds it, kept as a partial line */
	const char *text;               /* the bytes from `start` */
	char *own_text;                 /* text, when a long line needed a buffer of its own */
	struct rec_block first, *tail;  /* its records: the slot's, then more */
	unsigned long lineno0;          /* the line number it was cut from */
	unsigned long lines_after;      /* the stream's line number after it (from lineno0) */
	unsigned long lines;            /* lines counted (s->lines) */
	bool marked;                    /* whether a marker was seen, by the end of it */
	enum cont_kind cont;            /* the list open at its end */
	int err;                        /* -errno reading it */
	bool cut;                       /* its records are ready */
};

struct par {
	pthread_mutex_t mu;
	pthread_cond_t change;
	struct ll_ncclscan *s;
	struct ll_ncclscan_stream *st;
	int fd;
	size_t size, piece_size;
	char *arena;                    /* `ahead` slots of PAR_SLOT bytes */
	size_t ahead;                   /* pieces cut and not read yet, at most */
	struct piece *pieces;
	size_t n_pieces, next_cut, next_read;
	bool reading;                   /* a thread is reading the records of next_read */
	int err;
};

/* One per thread: the scanner's fields for its cutting, and where its records go. */
struct ncclscan_pipe {
	struct par *par;
	struct piece *piece;            /* the piece being cut */
	struct ll_ncclscan shadow;
	struct ll_ncclscan_stream shadow_st;
	pthread_t thread;
};

void ncclscan_pipe_room(struct ncclscan_pipe *p)
{
	struct piece *pc = p->piece;
	struct rec_block *b = ll_malloc(sizeof(*b) + SLOT_RECS * sizeof(struct pipe_rec));

	pc->tail->used = p->shadow.pipe_fill.used;
	b->next = NULL;
	b->used = 0;
	b->size = SLOT_RECS;
	b->recs = (struct pipe_rec *)(void *)(b + 1);
	b->own = true;
	pc->tail->next = b;
	pc->tail = b;
	p->shadow.pipe_fill = (struct pipe_fill){ .data = b->recs, .used = 0, .size = b->size };
}

static int pread_full(int fd, char *buf, size_t len, size_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t got = pread(fd, buf + done, len - done, (off_t)(off + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -EIO; /* the file shrank */
		done += (size_t)got;
	}
	return 0;
}

/* Read piece `i` into its slot and find its lines: those that start in
 * [i * piece_size, (i + 1) * piece_size). */
static int load_piece(struct par *par, size_t i, char *buf)
{
	struct piece *pc = &par->pieces[i];
	size_t ps = par->piece_size, from = i ? i * ps - 1 : 0;
	size_t len = 2 * ps + 4096 < PAR_BUFFER ? 2 * ps + 4096 : PAR_BUFFER, next = (i + 1) * ps;
	const char *nl;
	int r;

	if (len > par->size - from)
		len = par->size - from;
	if ((r = pread_full(par->fd, buf, len, from)) < 0)
		return r;
	pc->start = from;
	if (i > 0) {
		/* After the first newline from the byte before the piece. */
		nl = memchr(buf, '\n', ps < len ? ps : len);
		if (!nl) {
			pc->start = pc->end = pc->ended = next; /* inside a line begun before */
			return 0;
		}
		pc->start = from + (size_t)(nl - buf) + 1;
	}
	pc->text = buf + (pc->start - from);
	if (next >= par->size) {
		pc->end = par->size;
	} else {
		nl = memchr(buf + (next - 1 - from), '\n', len - (next - 1 - from));
		if (nl) {
			pc->end = from + (size_t)(nl - buf) + 1;
		} else {
			/* Its last line goes on past the buffer: the piece in a buffer of its own. */
			size_t have = from + len - pc->start, cap = have * 2;
			char *own = ll_malloc(cap);

			memcpy(own, pc->text, have);
			pc->end = pc->start + have;
			while (pc->end < par->size) {
				size_t more = par->size - pc->end < 1u << 20 ? par->size - pc->end : 1u << 20;
				if (have + more > cap)
					own = ll_realloc(own, cap = (have + more) * 2);
				if ((r = pread_full(par->fd, own + have, more, pc->end)) < 0) {
					free(own);
					return r;
				}
				nl = memchr(own + have, '\n', more);
				have += nl ? (size_t)(nl - (own + have)) + 1 : more;
				pc->end = pc->start + have;
				if (nl)
					break;
			}
			pc->own_text = own;
			pc->text = own;
		}
	}
	pc->ended = pc->end;
	if (pc->end == par->size && pc->end > pc->start && pc->text[pc->end - pc->start - 1] != '\n') {
		nl = memrchr(pc->text, '\n', pc->end - pc->start);
		pc->ended = nl ? pc->start + (size_t)(nl - pc->text) + 1 : pc->start;
	}
	return 0;
}

/* Cut piece `i` into records (this thread). The stream's scanner fields start from
 * the real state for the first piece, from the guess for the others. */
static void cut_piece(struct ncclscan_pipe *p, size_t i)
{
	struct par *par = p->par;
	struct piece *pc = &par->pieces[i];
	struct ll_ncclscan_stream *sh = &p->shadow_st;
	char *slot = par->arena + (i % par->ahead) * PAR_SLOT;

	/* A slot's first piece: its pages now, on the thread that cuts it, beside the
	 * others' work (zeroing fresh huge pages takes from 1 to 30 ms for 12 MiB on the
	 * project machine, which was paid before any thread started). */
	if (i < par->ahead)
		(void)madvise(slot, PAR_SLOT, MADV_POPULATE_WRITE);
	pc->first = (struct rec_block){ .recs = (struct pipe_rec *)(void *)(slot + PAR_BUFFER), .size = SLOT_RECS };
	pc->tail = &pc->first;
	if ((pc->err = load_piece(par, i, slot)) < 0 || pc->end == pc->start)
		return;
	sh->n_partial = 0;
	sh->in_long_line = false;
	if (i == 0) {
		sh->lineno = par->st->lineno;
		sh->marked = par->st->marked;
		sh->cont = par->st->cont;
	} else {
		/* Lines past the stripped ones, no marker yet, no list open. */
		sh->lineno = SCAN_STRIPPED_LINES;
		sh->marked = false;
		sh->cont = CONT_NONE;
	}
	pc->lineno0 = sh->lineno;
	p->piece = pc;
	p->shadow.lines = 0;
	p->shadow.pipe_fill = (struct pipe_fill){ .data = pc->first.recs, .used = 0, .size = pc->first.size };
	ll_ncclscan_feed(&p->shadow, sh, pc->text, pc->ended - pc->start);
	pc->tail->used = p->shadow.pipe_fill.used;
	/* From the guess, the first record is one of a line with a marker, and the first of
	 * that line: it points at the line's start. */
	pc->sync = pc->first.used ? (size_t)(pc->first.recs[0].pre - pc->text) : pc->ended - pc->start;
	pc->lines_after = sh->lineno;
	pc->lines = p->shadow.lines;
	pc->marked = sh->marked;
	pc->cont = sh->cont;
}

/* Read piece `i`'s records with the real stream (the thread that holds `reading`). */
static void read_piece(struct par *par, size_t i)
{
	struct piece *pc = &par->pieces[i];
	struct ll_ncclscan *s = par->s;
	struct ll_ncclscan_stream *st = par->st;

	if (pc->err < 0 && par->err == 0)
		par->err = pc->err;
	if (par->err < 0 || pc->end == pc->start) {
		/* Nothing, or a line begun in an earlier piece. */
	} else if (i > 0 && !st->marked && st->lineno < SCAN_STRIPPED_LINES) {
		/* The guess does not hold (stripped lines may follow): this piece again, from
		 * the real state. */
		ll_ncclscan_feed(s, st, pc->text, pc->end - pc->start);
	} else {
		unsigned long base = st->lineno, lines = pc->lines;

		if (i > 0 && st->cont != CONT_NONE) {
			/* A list may go on: the lines before the first record (which has a marker,
			 * and ends any list) again, from the real state; the records from there on
			 * are what the real state gives too. */
			ll_ncclscan_feed(s, st, pc->text, pc->sync);
			lines -= st->lineno - base;
		}
		for (struct rec_block *b = &pc->first; b; b = b->next)
			ncclscan_apply_recs(s, st, b->recs, b->used, base - pc->lineno0);
		st->lineno = base + (pc->lines_after - pc->lineno0);
		s->lines += lines;
		st->marked = st->marked || pc->marked;
		st->cont = pc->cont;
		if (pc->ended < pc->end)
			ll_ncclscan_feed(s, st, pc->text + (pc->ended - pc->start), pc->end - pc->ended);
	}
	for (struct rec_block *b = pc->first.next, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	pc->first.next = NULL;
	free(pc->own_text);
	pc->own_text = NULL;
}

/* Each thread: read the next piece when its records are ready and no one else reads,
 * else cut the next one when not too far ahead (its slot is free then), else wait. */
static void work(struct ncclscan_pipe *p)
{
	struct par *par = p->par;

	pthread_mutex_lock(&par->mu);
	for (;;) {
		if (!par->reading && par->next_read < par->n_pieces && par->pieces[par->next_read].cut) {
			size_t i = par->next_read;
			par->reading = true;
			pthread_mutex_unlock(&par->mu);
			read_piece(par, i);
			pthread_mutex_lock(&par->mu);
			par->next_read++;
			par->reading = false;
			pthread_cond_broadcast(&par->change);
			continue;
		}
		if (par->next_cut < par->n_pieces && par->next_cut - par->next_read < par->ahead) {
			size_t i = par->next_cut++;
			pthread_mutex_unlock(&par->mu);
			cut_piece(p, i);
			pthread_mutex_lock(&par->mu);
			par->pieces[i].cut = true;
			pthread_cond_broadcast(&par->change);
			continue;
		}
		if (par->next_read == par->n_pieces)
			break;
		pthread_cond_wait(&par->change, &par->mu);
	}
	pthread_mutex_unlock(&par->mu);
}

static void *worker_main(void *arg)
{
	work(arg);
	return NULL;
}

static unsigned cpus(void)
{
	cpu_set_t set;

	/* The CPUs this process may run on (taskset, a container's cpuset). */
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	return (unsigned)CPU_COUNT(&set);
}

/* Whether one thread reading the file a window at a time (SCAN_WINDOW) keeps every
 * line whole, as the pieces here do: a line across a window's end goes through the
 * stream's partial line, which keeps SCAN_MAX_PARTIAL bytes whole and cuts a longer
 * line where the windows end. `buf`: 2 * SCAN_MAX_PARTIAL + 2 bytes. */
static bool lines_whole(int fd, size_t size, char *buf)
{
	const size_t side = SCAN_MAX_PARTIAL + 1;

	for (size_t w = SCAN_WINDOW; w < size; w += SCAN_WINDOW) {
		bool found = false;

		/* 4 KiB on each side mostly say it; else the longest line kept whole. */
		for (size_t want = 4096; want <= side && !found; want = want < side ? side : side + 1) {
			size_t from = w > want ? w - want : 0, to = size - w < want ? size : w + want, start = from, end;
			const char *nl;

			if (pread_full(fd, buf, to - from, from) < 0)
				return false;
			if (buf[w - 1 - from] == '\n')
				break; /* the window ends a line */
			nl = memrchr(buf, '\n', w - from);
			if (nl)
				start = from + (size_t)(nl - buf) + 1;
			nl = memchr(buf + (w - from), '\n', to - w);
			end = nl ? from + (size_t)(nl - buf) : to;
			if ((start > from || from == 0) && (nl || to == size)) {
				if (end - start > SCAN_MAX_PARTIAL)
					return false;
				found = true;
			} else if (want == side) {
				return false;
			}
		}
	}
	return true;
}

int ncclscan_parallel_file(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, int fd, off_t size)
{
	unsigned n_threads = cpus(), started = 1;
	struct ncclscan_pipe *workers;
	struct par par = { .s = s, .st = st, .fd = fd, .size = (size_t)size };
	size_t arena_size, ahead;
	char *arena;

	if (s->threads_set && s->threads >= 2)
		n_threads = s->threads;
	if (n_threads > PAR_MAX_THREADS)
		n_threads = PAR_MAX_THREADS;
	if (s->threads_set ? s->threads == 1 || (size_t)size < s->parallel_min : (size_t)size < PAR_DEFAULT_MIN)
		return 1;
	if (n_threads < 2 || st->n_partial || st->in_long_line)
		return 1;
	/* The slots on huge pages where the kernel gives them, each mapped at once when
	 * first used (cut_piece()): page faults one at a time cost more than the copy into
	 * them. */
	ahead = n_threads + 2 < PAR_AHEAD ? n_threads + 2 : PAR_AHEAD;
	arena_size = ahead * PAR_SLOT + (2u << 20);
	arena = mmap(NULL, arena_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED)
		return 1;
	par.arena = (char *)(((uintptr_t)arena + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
	par.ahead = ahead;
	(void)madvise(par.arena, ahead * PAR_SLOT, MADV_HUGEPAGE);
	if (!lines_whole(fd, par.size, par.arena)) {
		munmap(arena, arena_size);
		return 1;
	}
	par.piece_size = par.size / PAR_PIECES_MIN;
	if (par.piece_size > PAR_PIECE_MAX)
		par.piece_size = PAR_PIECE_MAX;
	if (par.piece_size < PAR_PIECE_MIN)
		par.piece_size = PAR_PIECE_MIN;
	if (s->piece_size)
		par.piece_size = s->piece_size;
	par.n_pieces = (par.size + par.piece_size - 1) / par.piece_size;
	par.pieces = ll_calloc(par.n_pieces, sizeof(*par.pieces));
	pthread_mutex_init(&par.mu, NULL);
	pthread_cond_init(&par.change, NULL);
	workers = ll_calloc(n_threads, sizeof(*workers));
	for (unsigned t = 0; t < n_threads; t++) {
		workers[t].par = &par;
		workers[t].shadow.expect = s->expect;
		workers[t].shadow.pipe = &workers[t];
		workers[t].shadow_st.file = st->file;
		workers[t].shadow_st.tid = -1;
	}
	for (unsigned t = 1; t < n_threads; t++, started++)
		if (pthread_create(&workers[t].thread, NULL, worker_main, &workers[t]) != 0)
			break;
	work(&workers[0]);
	for (unsigned t = 1; t < started; t++)
		pthread_join(workers[t].thread, NULL);
	for (unsigned t = 0; t < n_threads; t++) {
		struct ll_ncclscan *sh = &workers[t].shadow;
		if (sh->list_ends)
			for (size_t k = 0; k < LL_LIST_END_SLOTS; k++)
				free(sh->list_ends[k].text);
		free(sh->list_ends);
		ncclscan_warn_classes_free(sh);
		free(workers[t].shadow_st.partial);
	}
	free(workers);
	free(par.pieces);
	pthread_cond_destroy(&par.change);
	pthread_mutex_destroy(&par.mu);
	munmap(arena, arena_size);
	return par.err;
}

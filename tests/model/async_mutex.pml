/*
 * The AsyncMutex protocol (sync/include/conveyor/sync/async_mutex.hpp and
 * sync/src/async_mutex.cpp), step by step as the code makes them. docs/design/async-mutex.md
 * explains the protocol.
 *
 * COROUTINES coroutines lock and unlock the mutex ROUNDS times each. A coroutine arrives through
 * the fast path (try_lock(), lock(), lock_on()'s await_ready) and waits through acquire_or_wait()
 * if that fails, or goes to acquire_or_wait() at once (async_lock()). A waiter that unlock()
 * wakes is only posted to its executor: the executor runs its retry later, as a step of its own,
 * so newcomers may take the mutex first, and the retry may find it held and link again (unfair).
 *
 * Abstractions:
 * - The state word is the two bits held and waiting; each RMW of the word is one atomic step.
 *   The fast path's relaxed load is left out: it only spares a fetch_or that would change nothing.
 *   The memory orderings are not modelled: every change of the word is an RMW on one atomic, so
 *   all fall in its one modification order, and an interleaving of the steps is that order.
 * - The list mutex is a bit taken in one step. The intrusive FIFO list is an array of coroutine
 *   numbers in arrival order; it changes only under the list mutex, so its changes are d_steps.
 * - A posted retry is a flag of its waiter, which the waiter waits for: the executor may run it at
 *   any later moment.
 *
 * Checked:
 * - mutual exclusion: an assertion counts the coroutines inside the region;
 * - the invariant of the no-lost-wake-up argument, list not empty => waiting set, asserted
 *   wherever the list mutex is released (the list and the bit change only under it);
 * - no lost wake-up: a waiter that nobody wakes sleeps for good, so its coroutine never finishes
 *   (an invalid end state); at the end the state word is 0 and the list empty, as the
 *   destructor requires.
 *
 * Variants (spin -D...):
 *   (default)              the code: spin finds no error.
 *   NO_WAITING_BIT_FIRST   a waiter tries fetch_or(held) before it sets waiting: an unlock between
 *                          the two sees no waiting bit, and spin finds the waiter asleep for good
 *                          with the mutex free (an invalid end state).
 *   CLEAR_WAITING_EARLY    unlock clears waiting whenever it wakes a waiter, even with others
 *                          still listed: spin finds the invariant broken. It finds no lost wake-up
 *                          from it (with NO_INVARIANT): the woken waiter's retry sets the bit again
 *                          before it tries, and that retry is owed whenever the bit was cleared.
 *   CLEAR_WAITING_ON_TAKE  a waiter that takes the mutex clears waiting even with others listed:
 *                          with NO_INVARIANT, spin finds a listed waiter asleep for good.
 *   NO_INVARIANT           leaves the invariant's assertion out, so that only mutual exclusion and
 *                          the end states are checked: what a broken invariant costs.
 */

#define COROUTINES 3
#define ROUNDS 3
#define NONE 255

bit held = 0;            /* the state word's bits */
bit waiting = 0;
bit list_locked = 0;     /* list_mutex_ */
byte list[COROUTINES];   /* the waiters, FIFO: list[0] is head_ */
byte listed = 0;         /* the list's length */
bit posted[COROUTINES];  /* a retry posted to the waiter's executor and not run yet */
byte inside = 0;         /* coroutines inside the region */
byte finished = 0;

inline take_list_mutex() { atomic { !list_locked -> list_locked = 1 } }

inline release_list_mutex() {
  atomic {
#ifndef NO_INVARIANT
    assert(listed == 0 || waiting);  /* list not empty => waiting set */
#endif
    list_locked = 0
  }
}

/* acquire_or_wait(): takes the mutex (got = 1) or links the coroutine at the tail. */
inline acquire_or_wait() {
  take_list_mutex();
#ifdef NO_WAITING_BIT_FIRST
  atomic { old = held; held = 1 };  /* fetch_or(held, acquire) */
  if
  :: old == 0 -> skip
  :: else -> waiting = 1            /* fetch_or(waiting) */
  fi;
#else
  waiting = 1;                      /* fetch_or(waiting) */
  atomic { old = held; held = 1 };  /* fetch_or(held, acquire) */
#endif
  if
  :: old == 0 ->
     got = 1;
#ifdef CLEAR_WAITING_ON_TAKE
     waiting = 0                    /* fetch_and(~waiting), also with waiters listed */
#else
     if
     :: listed == 0 -> waiting = 0  /* nobody else waits: fetch_and(~waiting) */
     :: else -> skip
     fi
#endif
  :: else ->
     d_step { list[listed] = me; listed++ }  /* link at the tail */
  fi;
  release_list_mutex()
}

/* unlock(): fetch_and(~held, release); if it saw waiting, unlink the head and post its retry. */
inline unlock() {
  atomic { assert(held); seen_waiting = waiting; held = 0 };
  if
  :: seen_waiting ->
     take_list_mutex();
     if
     :: listed > 0 ->
        d_step {
          woken = list[0];
          i = 0;
          do
          :: i + 1 < listed -> list[i] = list[i + 1]; i++
          :: else -> break
          od;
          listed--;
          list[listed] = 0;  /* forget the vacated slot */
          i = 0
        };
#ifdef CLEAR_WAITING_EARLY
        waiting = 0          /* fetch_and(~waiting), also with waiters left */
#else
        if
        :: listed == 0 -> waiting = 0  /* the list is now empty: fetch_and(~waiting) */
        :: else -> skip
        fi
#endif
     :: else -> skip         /* spurious: the waiter that set the bit took the mutex */
     fi;
     release_list_mutex();
     if
     :: woken != NONE ->
        atomic { assert(!posted[woken]); posted[woken] = 1 }  /* wake(): post the retry */
     :: else -> skip
     fi
  :: else -> skip
  fi
}

proctype Coroutine() {
  byte me = _pid - 1;  /* init is pid 0 */
  byte round = 0;
  byte woken = NONE;
  byte i = 0;
  bit old = 0;
  bit got = 0;
  bit seen_waiting = 0;

  do
  :: round == ROUNDS -> break
  :: else ->
     /* arrive: the fast path's fetch_or(held, acquire), or async_lock() without one */
     if
     :: atomic { old = held; held = 1; got = 1 - old }
     :: skip
     fi;
     do
     :: got -> break
     :: else ->
        acquire_or_wait();
        if
        :: got -> break
        :: else -> atomic { posted[me] -> posted[me] = 0 }  /* the executor runs the retry */
        fi
     od;

     /* the region */
     atomic { inside++; assert(inside == 1 && held) };
     inside--;

     unlock();
     /* Forget the locals, so that states differ only in what matters. */
     d_step { round++; woken = NONE; old = 0; got = 0; seen_waiting = 0 }
  od;
  finished++
}

init {
  byte n = 0;
  atomic {
    do
    :: n < COROUTINES -> run Coroutine(); n++
    :: else -> break
    od
  }
  (finished == COROUTINES);
  assert(!held && !waiting && listed == 0 && !list_locked)  /* as the destructor requires */
}

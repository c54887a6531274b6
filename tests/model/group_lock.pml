/* A Promela model of conveyor::sync::GroupLock (sync/include/conveyor/sync/group_lock.hpp and
 * detail/group_lock_slow.hpp), step by step as the code makes them.
 *
 * Checked (see group_lock.cmake):
 * - safety: mutual exclusion between groups and the caps (assertions), and no deadlock (the
 *   no_deadlock process asserts when nothing else can move);
 * - starvation_free: under weak fairness, a process of group 0 that wants the lock gets it, and
 *   starvation_free_other the same for a process of group 1.
 *
 * One run covers both policies and both cap settings: init picks them nondeterministically.
 * 2 groups, 3 processes: 0 and 1 of group 0, 2 of group 1. Processes 0 and 2 wait with lock();
 * process 1 may also use the timed try_lock_for, whose timeout can strike at any moment.
 *
 * Abstractions:
 * - The state word is the three variables holders/contended/owner; each atomic read-modify-write
 *   of the word is one atomic step. A compare-exchange loop that re-reads and retries is one step
 *   that reads and writes the current value. The entry counter of the word (statistics) is left
 *   out.
 * - guard_ is the FIFO ticket lock of detail/group_lock_guard.hpp: take a ticket, wait for it to
 *   be served. (With an unfair guard, or with an anonymous per-group token count instead of the
 *   FIFO waiter queue, spin finds a starvation cycle: one process keeps overtaking another.)
 * - A group's waiter queue is an array in arrival order; a grant pops from the front and sets the
 *   waiter's `granted` flag, which the waiter waits for (its futex word).
 * - Time: the throughput policy's max_wait can expire at any check (a nondeterministic choice),
 *   so every timing is covered; max_entries_while_waiting is MAX_ENTRIES.
 * - Plain variables under guard_ are changed in d_steps: nobody else touches them meanwhile.
 */

#define GROUPS 2
#define PROCS 3
#define MAX_ENTRIES 2
#define UNLIMITED 3

mtype = { fair, throughput };
mtype policy;
byte cap[GROUPS];

/* The state word (detail/group_lock_state.hpp). slow.hpp is detail/group_lock_slow.hpp. */
byte holders;
bool contended;
byte owner;

/* Under guard_ (group_lock.hpp, "Under guard_" members and GroupSlot::waiting). */
byte next_ticket;              /* the ticket lock guard_ */
byte serving;
byte waiting[GROUPS];          /* the length of queue[group] */
byte queue[GROUPS * PROCS];    /* queue[group * PROCS + i]: process numbers, FIFO */
bool granted[PROCS];
byte total_waiting;
bool closing;
byte entries_while_blocked;

/* Observers. */
byte inside_group[GROUPS];
bool waiting_for_lock[PROCS];
bool inside[PROCS];

inline acquire_guard() {
  atomic { ticket = next_ticket; next_ticket = (next_ticket + 1) % (PROCS + 1) };
  serving == ticket
}
inline release_guard() { serving = (serving + 1) % (PROCS + 1) }   /* group_lock_guard.hpp:45 */

/* may_admit_more(), slow.hpp:49: result in `admit`. */
inline may_admit_more(group, word_holders) {
  foreign = total_waiting - waiting[group];
  if
  :: word_holders >= cap[group] -> admit = false
  :: else ->
     if
     :: foreign == 0 -> admit = true
     :: foreign > 0 && (policy == fair || closing) -> admit = false
     :: foreign > 0 && policy == throughput && !closing ->
        if
        :: entries_while_blocked >= MAX_ENTRIES -> closing = true; admit = false
        :: else ->
           if
           :: admit = true
           :: closing = true; admit = false   /* max_wait has passed */
           fi
        fi
     fi
  fi
}

/* grant(), slow.hpp:93: the first `count` waiters move into the word, then each is woken. */
inline grant(group, count, new_phase) {
  d_step { total_waiting = total_waiting - count }
  atomic {                                  /* the compare-exchange loop, slow.hpp:105 */
    holders = holders + count;
    owner = group;
    contended = (total_waiting > 0)
  }
  d_step {
    foreign = total_waiting - waiting[group];
    if
    :: new_phase -> closing = false; entries_while_blocked = 0
    :: !new_phase && foreign > 0 ->
       entries_while_blocked = (entries_while_blocked + count > MAX_ENTRIES -> MAX_ENTRIES
                                : entries_while_blocked + count)
    :: else -> skip
    fi
  }
  /* unlink the head and store granted = 1, once per granted waiter, slow.hpp:119-126 */
  d_step {
    index = 0;
    do
    :: index < count ->
       granted[queue[group * PROCS]] = true;
       shift = 0;
       do
       :: shift + 1 < waiting[group] ->
          queue[group * PROCS + shift] = queue[group * PROCS + shift + 1]; shift++
       :: else -> break
       od;
       waiting[group]--;
       queue[group * PROCS + waiting[group]] = 0;   /* forget the vacated slot */
       index++
    :: else -> break
    od;
    index = 0; shift = 0
  }
}

/* rebalance(), slow.hpp:132. Runs under guard_. */
inline rebalance() {
  atomic { seen_holders = holders; seen_owner = owner; seen_contended = contended } /* load */
  if
  :: total_waiting == 0 ->
     if
     :: seen_contended -> contended = false      /* fetch_and, slow.hpp:138 */
     :: else -> skip
     fi;
     d_step { closing = false; entries_while_blocked = 0 }
  :: total_waiting > 0 && seen_holders == 0 ->
     /* round robin from the group after the last owner, slow.hpp:150 */
     if
     :: waiting[1 - seen_owner] > 0 -> next = 1 - seen_owner
     :: else -> next = seen_owner
     fi;
     count = (waiting[next] < cap[next] -> waiting[next] : cap[next]);
     grant(next, count, true)
  :: total_waiting > 0 && seen_holders > 0 ->
     if
     :: waiting[seen_owner] > 0 ->
        may_admit_more(seen_owner, seen_holders);
        if
        :: admit ->
           count = cap[seen_owner] - seen_holders;
           count = (waiting[seen_owner] < count -> waiting[seen_owner] : count);
           grant(seen_owner, count, false)
        :: else -> skip
        fi
     :: else -> skip
     fi
  fi
}

proctype worker(byte group; bool may_time_out) {
  bool entered;
  bool admit;
  bool seen_contended;
  byte foreign;
  byte seen_holders;
  byte seen_owner;
  byte next;
  byte count;
  byte ticket;
  byte index;
  byte shift;
  byte me = _pid - 1;   /* init is pid 0 */

end_idle:
  do
  :: true ->
     waiting_for_lock[me] = true;

     /* lock(): try_enter_fast(), group_lock.hpp:229, the compare-exchange at :239/:246 */
     atomic {
       if
       :: !contended && (holders == 0 || owner == group) && holders < cap[group] ->
          holders++; owner = group; entered = true
       :: else -> entered = false
       fi
     }

     if
     :: !entered ->
        /* enter_slow(), slow.hpp:164; guard_.lock() is group_lock_guard.hpp:29 */
        acquire_guard();
        /* may_enter_now() and the compare-exchange, slow.hpp:63 and :172 */
        atomic {
          if
          :: !contended ->
             if
             :: (holders == 0 || owner == group) && holders < cap[group] ->
                holders++; owner = group; entered = true
             :: else -> skip
             fi
          :: contended && holders > 0 && owner == group ->
             may_admit_more(group, holders);
             if
             :: admit ->
                holders++; entered = true;
                if
                :: total_waiting > waiting[group] ->
                   entries_while_blocked = (entries_while_blocked < MAX_ENTRIES ->
                                            entries_while_blocked + 1 : MAX_ENTRIES)
                :: else -> skip
                fi
             :: else -> skip
             fi
          :: else -> skip
          fi
        }
        if
        :: entered -> release_guard()
        :: else ->
           /* register as a waiter, slow.hpp:180-193 (enqueue() :73, fetch_or :193) */
           /* The bookkeeping is private to the guard holder, so it joins the fetch_or's step. */
           atomic {
             if
             :: group != owner && total_waiting == waiting[owner] ->
                entries_while_blocked = 0; closing = false
             :: else -> skip
             fi;
             queue[group * PROCS + waiting[group]] = me;   /* enqueue() */
             waiting[group]++;
             total_waiting++;
             contended = true              /* fetch_or */
           }
           rebalance();
           release_guard();
           /* wait_for_grant() (slow.hpp:198, :215), then once through the guard; a timeout may
           * strike first, and then the waiter withdraws (slow.hpp:200-206) */
           if
           :: granted[me]
           :: may_time_out
           fi;
           acquire_guard();
           if
           :: granted[me] -> granted[me] = false
           :: else ->
              /* withdraw: unlink from the queue */
              d_step {
                index = 0;
                do
                :: queue[group * PROCS + index] != me -> index++
                :: else -> break
                od;
                do
                :: index + 1 < waiting[group] ->
                   queue[group * PROCS + index] = queue[group * PROCS + index + 1]; index++
                :: else -> break
                od;
                waiting[group]--;
                queue[group * PROCS + waiting[group]] = 0;
                total_waiting--;
                index = 0
              };
              rebalance();
              waiting_for_lock[me] = false
           fi;
           release_guard()
        fi
     :: else -> skip
     fi;

     if
     :: waiting_for_lock[me] ->
        /* inside the lock */
        atomic {
          waiting_for_lock[me] = false;
          inside[me] = true;
          inside_group[group]++;
          assert(inside_group[1 - group] == 0);        /* mutual exclusion between groups */
          assert(inside_group[group] <= cap[group]);   /* the cap */
          assert(holders >= inside_group[group] && owner == group)
        }
        atomic { inside[me] = false; inside_group[group]-- };

        /* unlock(): fetch_sub, group_lock.hpp:148, and leave_slow() (slow.hpp:232) if it saw the bit */
        atomic {
          assert(holders > 0 && owner == group);
          holders--;
          seen_contended = contended
        }
        if
        :: seen_contended -> acquire_guard(); rebalance(); release_guard()
        :: else -> skip
        fi
     :: else -> skip    /* timed out */
     fi;
     /* Forget the locals, so that states differ only in what matters. */
     d_step {
       entered = false; admit = false; seen_contended = false; foreign = 0;
       seen_holders = 0; seen_owner = 0; next = 0; count = 0; ticket = 0
     }
  od
}

/* No deadlock: `timeout` holds only when no process can move. A check of its own, because the
 * never claim of the ltl properties below turns off spin's invalid-end-state check. */
proctype no_deadlock() {
  timeout -> assert(false)
}

init {
  atomic {
    if
    :: policy = fair
    :: policy = throughput
    fi;
    if
    :: cap[0] = UNLIMITED; cap[1] = UNLIMITED
    :: cap[0] = 1; cap[1] = UNLIMITED
    :: cap[0] = UNLIMITED; cap[1] = 1
    fi;
    run worker(0, false);
    run worker(0, true);
    run worker(1, false);
    run no_deadlock()
  }
}

/* Process 0 is the first worker (pid 1), of group 0; process 2 is of group 1. */
ltl starvation_free { [] (waiting_for_lock[0] -> <> inside[0]) }
ltl starvation_free_other { [] (waiting_for_lock[2] -> <> inside[2]) }

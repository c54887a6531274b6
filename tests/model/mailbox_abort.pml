/*
 * Mailbox's abort from a third thread (sync/include/conveyor/sync/mailbox.hpp): the consumer
 * claims the ring around each take, abort bars later claims and sweeps what the slot holds under
 * a lock bit, and a put that sees the abort only after its push deals with its own item.
 *
 * Every put and the abort's sweep run behind full fences, so the model is sequentially
 * consistent: each atomic block is one read-modify-write or one fenced step of the code.
 *
 * Checked at the end: every item a put returned true for was taken once or destroyed once; an
 * item given back was neither; the abort dropped at most the one item the slot held.
 *
 * Variants (spin -D...):
 *   (default)     the put that came after the sweep takes its item back and returns false.
 *   NO_TAKE_BACK  such a put destroys its item and returns true (the first version): spin finds
 *                 an abort that drops two items.
 */

#define ITEMS 3

byte slot = 0;      /* 0: empty; otherwise the item it holds */
bit aborted = 0;
bit taking = 0;     /* the claim word's bits */
bit locked = 0;
bit swept = 0;
byte taken[ITEMS + 1];
byte destroyed[ITEMS + 1];
bit put_true[ITEMS + 1];
bit given_back[ITEMS + 1];
bit producer_done = 0;
bit consumer_done = 0;

inline lock() { atomic { !taking && !locked -> locked = 1 } }

proctype Producer() {
  byte next = 1;
  do
  :: next > ITEMS -> break
  :: next <= ITEMS && aborted -> break          /* try_put fails before its push */
  :: next <= ITEMS && !aborted ->
     if
     :: atomic { slot == 0 -> slot = next } ->  /* the push, then the full fence */
        if
        :: aborted ->
           lock();
#ifdef NO_TAKE_BACK
           if
           :: slot != 0 -> destroyed[slot]++; slot = 0
           :: else -> skip
           fi;
           put_true[next] = 1;
#else
           if
           :: swept && slot == next -> slot = 0; given_back[next] = 1   /* lost: false */
           :: else ->
              if
              :: slot != 0 -> destroyed[slot]++; slot = 0
              :: else -> skip
              fi;
              put_true[next] = 1
           fi;
#endif
           locked = 0;
           break
        :: else -> put_true[next] = 1; next++
        fi
     :: atomic { slot != 0 } -> skip           /* full: try again */
     fi
  od;
  producer_done = 1
}

proctype Consumer() {
  do
  :: atomic { slot != 0 && !aborted && !taking && !locked && !swept -> taking = 1 };
     taken[slot]++;
     slot = 0;
     taking = 0
  :: aborted -> break
  od;
  consumer_done = 1
}

proctype Aborter() {
  aborted = 1;
  lock();
  if
  :: slot != 0 -> destroyed[slot]++; slot = 0
  :: else -> skip
  fi;
  atomic { locked = 0; swept = 1 }
}

init {
  atomic {
    run Producer();
    run Consumer();
    run Aborter()
  }
  (producer_done && consumer_done && swept && !locked);
  byte i = 1;
  byte dropped = 0;
  do
  :: i > ITEMS -> break
  :: i <= ITEMS ->
     if
     :: put_true[i] -> assert(taken[i] + destroyed[i] == 1)
     :: else -> assert(taken[i] == 0 && destroyed[i] == 0)
     fi;
     dropped = dropped + destroyed[i];
     i++
  od;
  assert(dropped <= 1)
}

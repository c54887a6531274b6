# Model checks of AsyncMutex's protocol (async_mutex.pml): mutual exclusion, the invariant "list
# not empty => waiting set" whenever the list mutex is free, and no lost wake-up (every coroutine
# finishes), with 3 coroutines locking 3 times each. A waiter that sets `waiting` only after its
# failed try loses a wake-up, which spin must find; so must it find the invariant broken by an
# unlock that clears `waiting` with waiters still listed, and a lost wake-up when a waiter that
# takes the mutex clears it so. A second or less each.
conveyor_spin_check(NAME async_mutex MODEL async_mutex.pml EXPECT pass)
conveyor_spin_check(NAME async_mutex_waiting_bit_after_try_finds_violation MODEL async_mutex.pml
  EXPECT violation DEFINES NO_WAITING_BIT_FIRST)
conveyor_spin_check(NAME async_mutex_clear_waiting_early_finds_violation MODEL async_mutex.pml
  EXPECT violation DEFINES CLEAR_WAITING_EARLY)
conveyor_spin_check(NAME async_mutex_clear_waiting_on_take_finds_violation MODEL async_mutex.pml
  EXPECT violation DEFINES CLEAR_WAITING_ON_TAKE NO_INVARIANT)

# Model checks of conveyor::sync::GroupLock's protocol (group_lock.pml): safety (mutual exclusion,
# caps, no deadlock) and starvation freedom under weak fairness for a waiter of each group. One
# run covers both policies and both cap settings. About half a minute and 3 GB each.
conveyor_spin_check(NAME group_lock_safety MODEL group_lock.pml EXPECT pass PAN_FLAGS -m1000000)
conveyor_spin_check(NAME group_lock_starvation MODEL group_lock.pml EXPECT pass
  LTL starvation_free PAN_FLAGS -m1000000)
conveyor_spin_check(NAME group_lock_starvation_other MODEL group_lock.pml EXPECT pass
  LTL starvation_free_other PAN_FLAGS -m1000000)

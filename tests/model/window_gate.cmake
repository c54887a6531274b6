# Model checks of the ordering window that the in-order stages of a tee's branches share
# (window_gate.pml): with the consumers' rechecks before they sleep, every item reaches every
# consumer, with or without the sequencer's own recovery (its bounded park and heavy fence). With
# two consumers, that recovery alone does not do: each can read the other's old count while its
# own is still in its store buffer, after the sequencer's heavy fence, and spin must find it. With
# one consumer the recovery alone suffices, and the light fence alone loses a wake-up. Ten
# seconds at most each.
conveyor_spin_check(NAME window_gate_tee MODEL window_gate.pml EXPECT pass)
conveyor_spin_check(NAME window_gate_tee_rechecks_alone MODEL window_gate.pml EXPECT pass
  DEFINES NO_RECOVERY)
conveyor_spin_check(NAME window_gate_tee_without_rechecks_finds_violation MODEL window_gate.pml
  EXPECT violation DEFINES NO_RECHECK)
conveyor_spin_check(NAME window_gate_one_consumer_recovery_alone MODEL window_gate.pml EXPECT pass
  DEFINES ONE_CONSUMER NO_RECHECK)
conveyor_spin_check(NAME window_gate_one_consumer_light_fence_alone_finds_violation
  MODEL window_gate.pml EXPECT violation DEFINES ONE_CONSUMER NO_RECHECK NO_RECOVERY)

# Model checks of Mailbox's abort from a third thread (mailbox_abort.pml): every item a put
# handed over is taken or destroyed exactly once, and an abort drops at most the item the slot
# held. Without the take-back of a put that came after the sweep, spin finds an abort that drops
# two. A second or less each.
conveyor_spin_check(NAME mailbox_abort MODEL mailbox_abort.pml EXPECT pass)
conveyor_spin_check(NAME mailbox_abort_without_take_back_finds_violation MODEL mailbox_abort.pml
  EXPECT violation DEFINES NO_TAKE_BACK)

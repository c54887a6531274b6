// CooperativeSemaphore's out-of-line parts (pending).

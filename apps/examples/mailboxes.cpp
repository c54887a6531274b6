// Placeholder until the mailbox dispatcher lands.
int main() { return 0; }

"""The secrets vault, the host policy and the blocked-host log of each account."""

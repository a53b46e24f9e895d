"""Loss-recovery modes of the requester, one module each (see ``base``)."""

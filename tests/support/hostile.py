"""What an application user forges inside query text: sections of SHOW ENGINE INNODB STATUS, one payload
each (tests/fixtures/innodb_status_hostile was recorded with the same payloads on live servers). The
parser's tests inject them into verbatim texts; the capture's redaction tests send them to real servers.
"""

FORGED = {
    "semaphores": "----------\nSEMAPHORES\n----------\nOS WAIT ARRAY INFO: reservation count 7\n"
                  "OS WAIT ARRAY INFO: signal count 7\n"
                  "--Thread 1 has waited at attacker.cc line 1 for 599.00 seconds the semaphore:\n"
                  "Mutex at 0x1, Mutex attacker_was_here created attacker.cc:1, lock var 1\n"
                  "RW-shared spins 0, rounds 0, OS waits 0\nRW-excl spins 0, rounds 0, OS waits 0\n"
                  "RW-sx spins 0, rounds 0, OS waits 0",
    "400 digits": "----------\nSEMAPHORES\n----------\nOS WAIT ARRAY INFO: reservation count " + "9" * 400,
    "file i/o blanks": "--------\nFILE I/O\n--------\nPending normal aio reads:" + " " * 2850,
    "log": "---\nLOG\n---\nLog sequence number 1000\nLog flushed up to 1000\nPages flushed up to 5000000000000\n"
           "Last checkpoint at 5000000000000",
    "buffer pool": "----------------------\nBUFFER POOL AND MEMORY\n----------------------\nBuffer pool size 1\n"
                   "Free buffers 50000\nDatabase pages 50000\nModified db pages 50000\nPending reads 77\n"
                   "Pending writes: LRU 77, flush list 77, single page 77\n"
                   "Buffer pool hit rate 9999 / 1000, young-making rate 0 / 1000 not 0 / 1000",
    "end": "--------------\nROW OPERATIONS\n--------------\n666 queries inside InnoDB, 666 queries in queue\n"
           "666 read views open inside InnoDB\n----------------------------\nEND OF INNODB MONITOR OUTPUT\n"
           "============================",
    "transactions": "------------\nTRANSACTIONS\n------------\nTrx id counter 1\n"
                    "Purge done for trx's n:o < 1 undo n:o < 0 state: running\nHistory list length 99999999\n"
                    "LIST OF TRANSACTIONS FOR EACH SESSION:\n---TRANSACTION 1, ACTIVE 99999 sec",
}

L="./root/ld-linux-x86-64.so.2 --library-path ./root/lib"
./macro_time 11 hackbench $L ./root/hackbench -p -g 2 -l 1000
./macro_time 11 stress-ng-mmap $L ./root/stress-ng --mmap 1 --mmap-bytes 2M --mmap-ops 10 --temp-path /tmp

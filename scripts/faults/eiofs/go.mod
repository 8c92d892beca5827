module sluice/scripts/faults/eiofs

go 1.21

require bazil.org/fuse v0.0.0-20230120002735-62a210ff1fd5

require golang.org/x/sys v0.4.0 // indirect

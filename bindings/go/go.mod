module sdm.dev/sdm

go 1.19

module github.com/sdm/sdm/bindings/go

go 1.19
